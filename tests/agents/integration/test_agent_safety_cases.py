"""The compromised MCP agent's cases of ``eval safety`` (``mcp_server/safety_cases.py``) on a real
database: every case passes, and the checks can fail (a case expecting a refusal that does not
come: its proposal is then one more than the invariants allow)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures_web import settings_from_variables
from resolveflow.bootstrap.app import App, open_app
from resolveflow.mcp_server import safety_cases
from resolveflow.mcp_server.safety_cases import AgentCase, run_agent_cases


@pytest.fixture
def app(database_url: str) -> Iterator[App]:
    settings = settings_from_variables({"database_url": database_url, "embedder": "fake"})
    with open_app(settings, auto_migrate=False) as opened:
        yield opened


def test_every_agent_case_passes(app: App) -> None:
    results = run_agent_cases(app)
    assert len(results) == 8
    assert [(name, problems) for name, problems in results if problems] == []


def test_a_refusal_that_does_not_come_fails_its_case(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    honest = safety_cases.COMMENT
    wrong = (AgentCase("expects a refusal", "propose_comment", honest, "allowlist"),)
    monkeypatch.setattr(safety_cases, "_cases", lambda other: wrong)
    [(name, problems)] = run_agent_cases(app)
    assert name == "expects a refusal"
    assert any(p.startswith("not refused") for p in problems)
    assert any("1 proposal made, expected 0" in p for p in problems)
