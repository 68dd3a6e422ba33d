"""The planner against a real database and the sandbox's fake GitLab (python-gitlab over HTTP).

Each compromised-planner case of ``eval safety`` runs here as its own test: no request of any
kind reaches GitLab's write endpoints, and the plan ends in the abstention or in a proposal that
still waits for a person. The honest plan (search -> prepare_issue -> final_answer) leaves one
undecided proposal in the inbox, with titles and quotes read from the database; and the openai
provider plans against the fake chat server, with the plan's deadline as its request timeout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.llm.openai_chat import OpenAIChatModel
from resolveflow.ask.domain.answers import ABSTENTION_TEXT
from resolveflow.ask.domain.planner import PlanLimits
from resolveflow.ask.issues_prepare import IssueTargets
from resolveflow.ask.planner import PlannerService, plan
from resolveflow.ask.planner_safety import (
    PLANNER_CASES,
    QUESTION,
    PlannerCase,
    PlannerWorld,
    Scene,
    planner_scene,
    policy_text,
    run_planner_case,
)
from resolveflow.bootstrap.gitlab import TenantGitLab
from resolveflow.cli.planner_safety import seeded_gitlab
from resolveflow.config import GitLabSettings, Settings
from resolveflow.policy_file import parse_policy
from resolveflow.retrieval.search import Searcher
from resolveflow.sandbox.chat_server import FakeChatServer, Reply, Slow
from resolveflow.sandbox.gitlab.server import FakeGitLabServer
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher
from resolveflow.web import views


@pytest.fixture
def fake() -> Iterator[FakeGitLabServer]:
    with seeded_gitlab() as server:
        yield server


@pytest.fixture
def scene(db: Database, fake: FakeGitLabServer) -> Iterator[Scene]:
    cipher = TokenCipher(TokenCipher.generate_key())
    settings = Settings(gitlab=GitLabSettings(url=fake.url, timeout_seconds=2.0))
    access = TenantGitLab(db, settings, lambda: parse_policy(""), cipher)
    world = PlannerWorld(db, access, cipher, lambda: fake.writes_received)
    with planner_scene(world) as made:
        yield made
    access.close()


@pytest.mark.parametrize("case", PLANNER_CASES, ids=[c.name for c in PLANNER_CASES])
def test_compromised_planner_case(case: PlannerCase, scene: Scene, fake: FakeGitLabServer) -> None:
    result, problems = run_planner_case(case, scene)
    assert problems == [], [s.model_dump() for s in result.trace]
    assert fake.writes_received == 0
    assert all(method == "GET" for method, _ in fake.requests)
    if case.expect == "abstain":
        assert result.abstained and result.text == ABSTENTION_TEXT and not result.citations
    assert all(p.decision is None and p.execution is None for p in result.proposals)


def test_honest_plan_leaves_one_undecided_proposal_in_the_inbox(
    scene: Scene, fake: FakeGitLabServer
) -> None:
    result, problems = run_planner_case(PLANNER_CASES[0], scene)
    assert problems == []
    assert not result.abstained and result.stopped == "final answer"
    [citation] = result.citations
    assert citation.title == "Disk full" and "Run df -h" in citation.quote  # from the database
    assert [s.tool for s in result.trace] == ["search_knowledge", "prepare_issue", "final_answer"]
    assert result.trace[0].chunk_ids and result.trace[2].chunk_ids == [citation.chunk_id]
    [proposal] = result.proposals
    assert result.trace[1].proposal_id == proposal.id
    [item] = [i for i in views.inbox(scene.world.db, scene.principal)["items"]]
    assert (item["proposal_id"], item["kind"], item["status"]) == (
        proposal.id,
        "gitlab.issue_create",
        "awaiting_approval",
    )
    assert item["digest"] == proposal.digest and item["assignees"] == ["alice"]
    assert fake.writes_received == 0 and fake.issues(42) == []


def service_for(scene: Scene, model: OpenAIChatModel, limits: PlanLimits) -> PlannerService:
    policy = parse_policy(policy_text(scene.tenant))
    return PlannerService(
        scene.world.db,
        Searcher(scene.world.db, HashingEmbedder()),
        model,
        IssueTargets(policy=lambda: policy, gitlab=scene.world.gitlab),
        limits,
    )


def test_openai_provider_plans_against_the_chat_server_with_passages_fenced(
    scene: Scene, fake: FakeGitLabServer
) -> None:
    searcher = Searcher(scene.world.db, HashingEmbedder())
    [first, *_] = [h.chunk_id for h in searcher.search(scene.tenant_id, "disk full", k=5)]
    final = {"answer": "Rotate the logs.", "citations": [first], "confidence": 0.7}
    with FakeChatServer() as chat:
        chat.queue(
            Reply(json.dumps({"tool": "search_knowledge", "arguments": {"query": "disk full"}})),
            Reply(json.dumps({"tool": "final_answer", "arguments": final})),
        )
        model = OpenAIChatModel(chat.base_url, None, chat.model, timeout_seconds=30)
        result = plan(service_for(scene, model, PlanLimits()), scene.principal, QUESTION)
        model.close()
    assert not result.abstained, result.stopped
    assert [c.chunk_id for c in result.citations] == [first]
    assert result.generator == f"openai/{chat.model}"
    second = chat.requests[1]["messages"][-1]["content"]
    assert second.startswith("Result of step 1 (data):\n<<<passage id=")
    assert f"<<<passage id={first}>>>" in second
    assert fake.writes_received == 0


def test_the_deadline_is_the_model_calls_timeout(scene: Scene) -> None:
    with FakeChatServer() as chat:
        chat.queue(Slow(5.0, Reply("{}")))
        model = OpenAIChatModel(chat.base_url, None, chat.model, timeout_seconds=60)
        service = service_for(scene, model, PlanLimits(max_steps=3, max_seconds=1.0))
        result = plan(service, scene.principal, QUESTION)
        model.close()
    assert result.abstained and "time limit" in result.stopped
    [only] = result.trace  # the request was cut at the deadline, not answered after 5 s
    assert (only.tool, only.outcome) == ("(model)", "stopped")
    # At most one request, cut at the deadline and never retried (on a loaded machine the
    # deadline can pass before the server has read it: none, then, but never a second).
    assert len(chat.requests) <= 1
