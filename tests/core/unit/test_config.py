from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from resolveflow.bootstrap.app import gate_settings, search_params
from resolveflow.config import (
    DatabaseSettings,
    ExecutorSettings,
    GitHubSettings,
    Settings,
    env_names,
    load_settings,
)
from resolveflow.errors import ConfigError
from resolveflow.gate.lease import GateSettings
from resolveflow.retrieval.search import SearchParams

DOCS = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
# Read by the CLI straight from the environment, before the settings (which may be invalid).
READ_BEFORE_SETTINGS = {"RESOLVEFLOW_LOG_LEVEL"}


def test_defaults_need_no_environment() -> None:
    settings = load_settings()
    assert settings.database.url is None  # the embedded Postgres
    assert settings.github.api_url == "https://api.github.com"
    assert settings.approval.ttl_seconds == 7 * 86_400
    assert settings.model.provider == "none"


def _clear(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret else None


# (variable, value, where it lands, the value read back): prefixed names, historical names that
# the groups keep through aliases, JSON, booleans, paths and secrets.
ENVIRONMENT = [
    ("RESOLVEFLOW_APPROVAL_TTL_SECONDS", "120", lambda s: s.approval.ttl_seconds, 120),
    ("RESOLVEFLOW_DB_POOL_MAX_SIZE", "3", lambda s: s.database.pool_max_size, 3),
    ("RESOLVEFLOW_HOME", "/srv/rf", lambda s: s.database.home, Path("/srv/rf")),
    ("RESOLVEFLOW_LEASE_SECONDS", "90", lambda s: s.executor.lease_seconds, 90.0),
    ("RESOLVEFLOW_EXECUTOR_POLL_SECONDS", "0.5", lambda s: s.executor.poll_seconds, 0.5),
    ("RESOLVEFLOW_GITHUB_WEB_URL", "http://forge/", lambda s: s.github.web_url, "http://forge"),
    ("RESOLVEFLOW_WEB_COOKIE_SECURE", "false", lambda s: s.web.cookie_secure, False),
    (
        "RESOLVEFLOW_WEB_USERS",
        '{"alex": "acme:approver"}',
        lambda s: s.web.users.get("alex"),
        "acme:approver",
    ),
    ("RESOLVEFLOW_WEBHOOK_AUTO_TRIAGE", "0", lambda s: s.webhooks.auto_triage, False),
    ("RESOLVEFLOW_WORKER_CONCURRENCY", "4", lambda s: s.worker.concurrency, 4),
    ("RESOLVEFLOW_LIMIT_RUNS_PER_DAY", "7", lambda s: s.limits.runs_per_day, 7),
    ("RESOLVEFLOW_MODEL_DAILY_CALLS_PER_PRINCIPAL", "9", lambda s: s.limits.model_calls_per_day, 9),
    ("RESOLVEFLOW_EMBEDDER", "fake", lambda s: s.embedding.provider, "fake"),
    ("RESOLVEFLOW_OPENAI_EMBEDDINGS_MODEL", "e5", lambda s: s.embedding.openai_model, "e5"),
    ("RESOLVEFLOW_FUSION_METHOD", "rrf", lambda s: s.retrieval.fusion_method, "rrf"),
    ("RESOLVEFLOW_MODEL", "llama-3", lambda s: s.model.name, "llama-3"),
    ("RESOLVEFLOW_MODEL_PROVIDER", "openai", lambda s: s.model.provider, "openai"),
    ("RESOLVEFLOW_SCRIPTED_MODEL_FILE", "a.json", lambda s: s.model.scripted_file, Path("a.json")),
    ("RESOLVEFLOW_RELEVANCE_FLOOR", "0.3", lambda s: s.investigation.relevance_floor, 0.3),
    ("RESOLVEFLOW_INVESTIGATION_TOP_K", "8", lambda s: s.investigation.top_k, 8),
    ("RESOLVEFLOW_POLICY_FILE", "p.toml", lambda s: s.triage.policy_file, Path("p.toml")),
    ("RESOLVEFLOW_TOKEN", "rf_x", lambda s: _clear(s.cli.token), "rf_x"),
    (
        "RESOLVEFLOW_GITHUB_WEBHOOK_SECRET",
        "hook",
        lambda s: _clear(s.webhooks.secret),
        "hook",
    ),
]


@pytest.mark.parametrize(("variable", "value", "read", "expected"), ENVIRONMENT)
def test_each_variable_keeps_its_name_and_lands_in_its_group(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, read: Any, expected: object
) -> None:
    before = read(load_settings())
    monkeypatch.setenv(variable, value)
    assert read(load_settings()) == expected != before


def test_a_dotenv_file_is_read_by_every_group(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(
        "RESOLVEFLOW_DATABASE_URL=postgresql://db/rf\nRESOLVEFLOW_WORKER_CONCURRENCY=5\n"
        "RESOLVEFLOW_MODEL=qwen\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    settings = load_settings()
    assert settings.database.url is not None
    assert settings.database.url.get_secret_value() == "postgresql://db/rf"
    assert (settings.worker.concurrency, settings.model.name) == (5, "qwen")


def test_code_passes_fields_by_name_and_they_win_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RESOLVEFLOW_DATABASE_URL", "postgresql://env/db")
    monkeypatch.setenv("RESOLVEFLOW_DB_POOL_MAX_SIZE", "4")
    settings = Settings(database=DatabaseSettings(url="postgresql://code/db"))
    assert settings.database.url is not None
    assert settings.database.url.get_secret_value() == "postgresql://code/db"
    assert settings.database.pool_max_size == 4  # the rest of the group still comes from the env


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RESOLVEFLOW_LEASE_SECONDS", "soon"),
        ("RESOLVEFLOW_DB_POOL_MAX_SIZE", "0"),
        ("RESOLVEFLOW_RELEVANCE_FLOOR", "2"),
        ("RESOLVEFLOW_WEB_USERS", "{not json"),
        ("RESOLVEFLOW_GITHUB_API_URL", "ftp://example"),
    ],
)
def test_invalid_values_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=f"invalid setting {variable}:"):
        load_settings()


SECRETS = {
    "RESOLVEFLOW_DATABASE_URL": "postgresql://u:pw-secret@h/db",
    "RESOLVEFLOW_GITHUB_TOKEN": "ghp_supersecret",
    "RESOLVEFLOW_GITHUB_OAUTH_CLIENT_SECRET": "oauth-secret",
    "RESOLVEFLOW_GITHUB_WEBHOOK_SECRET": "hook-secret",
    "RESOLVEFLOW_TOKEN_ENCRYPTION_KEY": "fernet-secret",
    "RESOLVEFLOW_OPENAI_API_KEY": "sk-chat-secret",
    "RESOLVEFLOW_OPENAI_EMBEDDINGS_API_KEY": "sk-embed-secret",
    "RESOLVEFLOW_TOKEN": "rf-token-secret",
    "RESOLVEFLOW_NOTIFY_URL": "https://hooks.example/services/T0/B0/notify-url-secret",
    "RESOLVEFLOW_NOTIFY_SECRET": "notify-hmac-secret",
}


def test_secrets_are_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    for shown in (repr(settings), str(settings), settings.model_dump_json()):
        assert not [value for value in SECRETS.values() if value in shown]


def test_every_secret_is_a_secret_string() -> None:
    places = env_names()
    for name in SECRETS:
        group, field = places[name].split(".")
        annotation = type(getattr(Settings(), group)).model_fields[field].annotation
        assert SecretStr in typing.get_args(annotation), name


def test_docs_list_every_variable_and_no_other() -> None:
    documented = set(re.findall(r"`(RESOLVEFLOW_[A-Z0-9_]+)`", DOCS.read_text(encoding="utf-8")))
    assert documented - READ_BEFORE_SETTINGS == set(env_names())


def test_defaults_of_lower_layers_are_stated_once() -> None:
    settings = Settings()
    assert search_params(settings) == SearchParams()
    # Pacing is the one difference on purpose: the product paces writes by default, the gate
    # constructed bare (tests, benchmarks) does not (tests/gate/unit/test_pace.py).
    gate = gate_settings(settings)
    assert gate.pace.paces and dataclasses.replace(gate, pace=GateSettings().pace) == GateSettings()


def test_lease_must_outlive_a_whole_request() -> None:
    def settings(lease: float) -> Settings:
        return Settings(
            executor=ExecutorSettings(lease_seconds=lease),
            github=GitHubSettings(timeout_seconds=10),
        )

    with pytest.raises(ConfigError, match="at least 5 times"):
        gate_settings(settings(20))
    assert gate_settings(settings(50)).lease_seconds == 50


def test_an_empty_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    # What `${VAR:-}` in deploy/compose.yaml passes for a secret nobody set.
    for name in ("RESOLVEFLOW_GITHUB_TOKEN", "RESOLVEFLOW_GITHUB_WEBHOOK_SECRET"):
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("RESOLVEFLOW_DB_POOL_MAX_SIZE", "")
    settings = load_settings()
    assert settings.github.token is None and settings.webhooks.secret is None
    assert settings.database.pool_max_size == 10


def test_a_check_of_two_settings_together_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # A model validator's error names no field: the group's prefix stands in, not a traceback.
    monkeypatch.setenv("RESOLVEFLOW_PACE_GITHUB_BURST", "80")
    monkeypatch.setenv("RESOLVEFLOW_PACE_GITHUB_PER_HOUR", "50")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    said = raised.value.message
    assert said.startswith("invalid setting RESOLVEFLOW_PACE_*: ") and "\n" not in said
    assert "RESOLVEFLOW_PACE_GITHUB_BURST must be below" in said
