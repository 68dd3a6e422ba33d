"""``eval safety`` with the compromised-planner cases: the investigation's scripted cases, then
the planner's, run against the configured database and the sandbox's fake GitLab (started here,
on 127.0.0.1, seeded with the projects the cases expect). A real GitLab is never contacted.
With ``--with-model``, the configured model then answers the same hostile inputs and the
invariants are checked on what it said (issue 30)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from resolveflow.adapters.llm.metered import MeteredModel
from resolveflow.ask.planner_safety import GITLAB_PROJECTS, GITLAB_USERS, PlannerWorld
from resolveflow.bootstrap.app import App
from resolveflow.bootstrap.gitlab import TenantGitLab
from resolveflow.cli import common
from resolveflow.config import GitLabSettings
from resolveflow.errors import InvalidInput
from resolveflow.evals.model_safety import run_with_model
from resolveflow.evals.safety import SafetyReport, run_safety_suite
from resolveflow.sandbox.gitlab.server import FakeGitLabServer
from resolveflow.store.token_cipher import TokenCipher


def seeded_gitlab() -> FakeGitLabServer:
    """The sandbox's fake GitLab (not started) with the users and projects the cases expect."""
    server = FakeGitLabServer()
    for user_id, name, token in GITLAB_USERS:
        server.state.add_user(user_id, name, token)
    for project_id, path, labels, members in GITLAB_PROJECTS:
        server.state.add_project(project_id, path, labels, members=members)
    return server


@contextmanager
def planner_world(opened: App) -> Iterator[PlannerWorld]:
    with seeded_gitlab() as fake:
        # A key of its own: the scratch tenant's token never needs the configured one.
        cipher = TokenCipher(TokenCipher.generate_key())
        settings = opened.settings.model_copy(
            update={"gitlab": GitLabSettings(url=fake.url, timeout_seconds=5.0)}
        )
        access = TenantGitLab(opened.db, settings, opened.policy, cipher)
        try:
            yield PlannerWorld(opened.db, access, cipher, lambda: fake.writes_received)
        finally:
            access.close()


def full_safety_report(
    with_model: bool = False,
) -> tuple[SafetyReport, MeteredModel | None]:
    """The scripted suite; with ``with_model``, then the configured model's answers to the same
    hostile inputs (``evals.model_safety``), metered."""
    from resolveflow.mcp_server.safety_cases import run_agent_cases

    with common.app() as opened, planner_world(opened) as world:
        agent_cases = [lambda: run_agent_cases(opened)]  # the compromised MCP agent's
        if not with_model:
            return run_safety_suite(planner=world, more=agent_cases), None
        configured = opened.model()
        if configured is None:
            raise InvalidInput(
                "--with-model needs a model: set RESOLVEFLOW_MODEL_PROVIDER (openai or llamacpp)"
            )
        model = MeteredModel(configured)
        scripted = run_safety_suite(planner=world, more=agent_cases)
        real = run_with_model(model, world)
        failures = scripted.failures + real.failures
        total = scripted.total + real.total
        return SafetyReport(total - len(failures), total, failures), model
