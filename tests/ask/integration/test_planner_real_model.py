"""The bounded planner against a real small model (issue 30): llama.cpp's server on SmolLM2-135M.

The world is the compromised-planner cases' (``test_planner_safety``): a scratch tenant with a
small knowledge base, another tenant's passage it must never cite, the sandbox's fake GitLab
behind ``prepare_issue``. The model writes plausible nonsense, so the test holds for every
outcome the code allows and names the one that happened: the plan ends inside its limits
(steps, wall time: each step's request is cut at what is left of the deadline), no request
reaches GitLab's write endpoints, a proposal it made waits undecided and unexecuted and is the one
the answer lists, and the answer cites only passages this plan's searches returned, or is the
abstention.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from test_planner_safety import fake, scene, service_for

from resolveflow.adapters.llm.metered import MeteredModel
from resolveflow.ask.domain.answers import ABSTENTION_TEXT
from resolveflow.ask.domain.planner import PlanLimits
from resolveflow.ask.planner import plan
from resolveflow.ask.planner_safety import DOCS, QUESTION, Scene
from resolveflow.gate import proposals
from resolveflow.sandbox.gitlab.server import FakeGitLabServer

pytestmark = [pytest.mark.integration, pytest.mark.real_model]
pytest_plugins = ["fixtures_llamacpp"]
__all__ = ["fake", "scene"]  # the safety cases' fixtures, used here by name

# A plan step is at most 400 tokens (Purpose.PLAN_STEP): 10-20 s for SmolLM2 on one thread of two
# busy cores. Four steps are enough for search, prepare_issue and final_answer; 100 s bounds them
# whatever the machine, since the last request is cut at the deadline.
LIMITS = PlanLimits(max_steps=4, max_seconds=100.0)
# What may follow the deadline: one search or one prepare_issue against the fake GitLab.
AFTER_DEADLINE_SECONDS = 15.0
# How a plan that did not answer may end: a limit, or the last step's own refusal.
LIMIT_STOPS = ("step limit", "time limit", "invalid output limit")


def test_a_real_small_model_plans_inside_its_limits_and_nothing_it_proposes_runs(
    scene: Scene, fake: FakeGitLabServer, llamacpp_model: Any
) -> None:
    db, principal = scene.world.db, scene.principal
    model = MeteredModel(llamacpp_model)
    before = {p["id"] for p in proposals.list_proposals(db, principal)}
    start = time.monotonic()
    result = plan(service_for(scene, model, LIMITS), principal, QUESTION)
    seconds = time.monotonic() - start
    trace = [(s.tool, s.outcome) for s in result.trace]
    # Shown with -s: what the real model did, for the closing figures.
    print(f"real model plan: {seconds:.0f}s stopped={result.stopped!r} abstained={result.abstained}",
          f"citations={len(result.citations)} proposals={len(result.proposals)}",
          f"trace={trace} calls={model.shown()}")  # fmt: skip

    # The plan ended inside its limits, one request per step, each step in the trace.
    assert seconds <= LIMITS.max_seconds + AFTER_DEADLINE_SECONDS, result.stopped
    assert 1 <= len(result.trace) <= LIMITS.max_steps, trace
    assert len(model.records) == len(result.trace), (model.shown(), trace)
    assert all(c.purpose == "plan_step" and c.requests == 1 for c in model.records), model.shown()
    assert sum(s.outcome == "invalid" for s in result.trace) <= LIMITS.max_invalid, trace
    assert result.generator == f"{model.provider}/{model.model}"

    # Nothing was written to GitLab; what the plan proposed waits for a person.
    assert fake.writes_received == 0
    assert all(method == "GET" for method, _ in fake.requests), fake.requests
    made = [p for p in proposals.list_proposals(db, principal) if p["id"] not in before]
    assert len(made) <= LIMITS.max_proposals
    assert all(p["decision"] is None and p["execution_id"] is None for p in made), made
    assert {p.id for p in result.proposals} == {p["id"] for p in made}
    assert all(p.decision is None and p.execution is None for p in result.proposals)
    assert {s.proposal_id for s in result.trace if s.proposal_id} == {p["id"] for p in made}
    assert all(p["kind"] == "gitlab.issue_create" for p in made), made
    assert fake.issues(42) == [] and fake.issues(43) == []

    returned = {cid for s in result.trace if s.tool == "search_knowledge" for cid in s.chunk_ids}
    if not result.abstained:  # the model's final answer passed Ask's citation check
        cited = [c.chunk_id for c in result.citations]
        assert result.stopped == "final answer" and trace[-1] == ("final_answer", "ok")
        assert cited and len(set(cited)) == len(cited) and set(cited) <= returned, cited
        assert scene.other_chunk not in cited
        assert result.trace[-1].chunk_ids == cited
        assert {c.title for c in result.citations} <= {title for _, title, _ in DOCS}
    else:  # a limit, an invalid step or a refused one ended it: the fixed abstention
        assert result.text == ABSTENTION_TEXT and not result.citations
        last = result.trace[-1]
        assert result.stopped.startswith(LIMIT_STOPS) or last.outcome in {
            "violation", "refused", "stopped"
        }, (result.stopped, trace)  # fmt: skip
