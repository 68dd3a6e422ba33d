from __future__ import annotations

import pytest

from resolveflow.config import Settings, load_settings
from resolveflow.errors import ConfigError
from resolveflow.wiring import gate_settings


def test_defaults_need_no_environment() -> None:
    settings = load_settings()
    assert settings.embedded
    assert settings.github_api_url == "https://api.github.com"
    assert settings.approval_ttl_seconds == 7 * 86_400


def test_invalid_values_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESOLVEFLOW_LEASE_SECONDS", "soon")
    with pytest.raises(ConfigError, match="RESOLVEFLOW_LEASE_SECONDS"):
        load_settings()


def test_secrets_are_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESOLVEFLOW_GITHUB_TOKEN", "ghp_supersecret")
    monkeypatch.setenv("RESOLVEFLOW_DATABASE_URL", "postgresql://u:pw-secret@h/db")
    shown = repr(load_settings())
    assert "ghp_supersecret" not in shown and "pw-secret" not in shown


def test_lease_must_outlive_a_whole_request() -> None:
    with pytest.raises(ConfigError, match="at least 5 times"):
        gate_settings(Settings(lease_seconds=20, github_timeout_seconds=10))
    assert gate_settings(Settings(lease_seconds=50, github_timeout_seconds=10)).lease_seconds == 50
