"""The ai_investigation branch through the real triage graph: sparse issues shaped like
huggingface/datasets' served by the fake GitHub, an index built from the corpus with the real
ingestion and the local MiniLM embedder, Postgres checkpoints, and the executor posting once.

The issues are invented ones (tests/data/hf-datasets-synthetic, same ids); the tests whose outcome
depends on the texts also run on the real corpus (the data tier). The index holds a fixed subset
of the corpus (the related issues, the pull requests that fixed them, and every 40th issue before
the query) so the suite stays fast; vectors are cached for the session, so each test's fresh
database is indexed without re-running the model.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from conftest import (
    IssueSet,
    World,
    classified_run,
    make_executor,
    make_world,
    on_synthetic_and_real_hf_data,
)
from resolveflow.adapters.embedder.protocol import EmbeddingSpace, Vectors
from resolveflow.adapters.llm.openai_chat import OpenAIChatModel
from resolveflow.adapters.llm.scripted import ScriptedModel
from resolveflow.bootstrap.app import investigation_config
from resolveflow.config import Settings
from resolveflow.gate import approvals as approval_service
from resolveflow.gate import proposals as proposal_service
from resolveflow.gate import quiet as quiet_service
from resolveflow.llm.messages import ChatMessage
from resolveflow.llm.protocol import ChatModel
from resolveflow.policy_file import PolicyFile, parse_policy
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher
from resolveflow.retrieval.sources import corpus_record
from resolveflow.sandbox.chat_server import FakeChatServer, Reply, Slow
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store import model_calls as model_call_store
from resolveflow.store.checkpoints import checkpoint_saver
from resolveflow.store.database import Database
from resolveflow.triage import investigation as investigation_service
from resolveflow.triage import runs as run_service
from resolveflow.triage.graph.build import TriageDeps, build_triage_graph
from resolveflow.triage.graph.investigate import make_investigator
from resolveflow.triage.graph.runs import RunController
from resolveflow.web import views

REPO = "huggingface/datasets"
REPO_LABELS = ["bug", "enhancement", "dataset request", "documentation", "needs-triage"]
POLICY = parse_policy(
    f'[repositories."{REPO}"]\nextra_labels = {{ ai_investigation = ["bug", "enhancement"] }}\n'
)
GOOD_DIAGNOSIS = json.dumps(
    {
        "root_cause": "The Windows job broke after a dependency release.",
        "severity": "low",
        "missing_info": [],
        "recommended_next_steps": ["pin the dependency"],
        "citations": ["S1"],
        "suggested_labels": ["bug"],
        "duplicate_of": None,
    }
)
SPARSE = "4118"  # "Failing CI tests on Windows": one line and a CircleCI link
RELATED = ("3839", "3117", "3069")  # earlier Windows / CI reports; fixed by PRs 3840, 3118, 3070
FIXES = ("3840", "3118", "3070")
UNRELATED = "1745"  # "difference between wsc and wsc.fixed for superglue": no such topic indexed
FLOOR = Settings().investigation.relevance_floor


def subset(data: IssueSet) -> list[SourceDocument]:
    issues, pulls = data.records("issues"), data.records("pulls")
    before = sorted(
        (r for r in issues.values() if r["created_at"] < issues[SPARSE]["created_at"]),
        key=lambda r: int(r["id"]),
    )
    chosen = {r["id"] for r in before[::40]} | set(RELATED)
    chosen -= {SPARSE, UNRELATED}
    docs = [corpus_record(issues[i], "github:" + REPO, where=i) for i in sorted(chosen, key=int)]
    docs += [corpus_record(pulls[p], "github:" + REPO, where=p) for p in FIXES]
    return docs


class CachedEmbedder:
    """The default MiniLM (ONNX Runtime), with vectors remembered for the test session."""

    def __init__(self) -> None:
        from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM

        self.inner = OnnxMiniLM()
        self.memo: dict[str, Vectors] = {}

    @property
    def space(self) -> EmbeddingSpace:
        return self.inner.space

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            for text, vector in zip(missing, self.inner.embed_documents(missing), strict=True):
                self.memo[text] = vector
        return np.stack([self.memo[t] for t in texts]) if texts else self.inner.embed_documents([])

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector


@pytest.fixture(scope="session")
def embedder() -> CachedEmbedder:
    return CachedEmbedder()


@dataclass
class Investigations:
    db: Database
    world: World
    fake: FakeGitHubServer
    github: Any
    pool: Any
    searcher: Searcher
    data: IssueSet

    def controller(
        self,
        model: ChatModel | None,
        searcher: Any = None,
        policy: PolicyFile = POLICY,
        **config: Any,
    ) -> RunController:
        settings = investigation_config(Settings())
        options = {**vars(settings), **config}
        investigator = make_investigator(
            self.db,
            searcher or self.searcher,
            model,
            investigation_service.InvestigationConfig(**options),
            lambda: policy,
        )
        deps = TriageDeps(
            db=self.db,
            github=self.github,
            policy=lambda: policy,
            executor=lambda: make_executor(self.db, self.github),
            investigator=investigator,
        )
        graph = build_triage_graph(deps, checkpoint_saver(self.pool))
        return RunController(db=self.db, graph=graph, lease_seconds=60, approval_ttl_seconds=3600)

    def seed(self, number: str) -> int:
        record = self.data.records("issues")[number]
        self.fake.add_issue(
            REPO,
            int(number),
            record["title"],
            record["body"] or "",
            labels=[],
            created_at=record["created_at"],
            updated_at=record["created_at"],
        )
        return int(number)

    def run(
        self,
        model: ChatModel | None,
        number: str,
        searcher: Any = None,
        policy: PolicyFile = POLICY,
        **config: Any,
    ) -> dict[str, Any]:
        controller = self.controller(model, searcher, policy, **config)
        run_id = controller.start(self.world.requester(self.db), REPO, self.seed(number))
        view = run_service.describe_run(self.db, self.world.approver(self.db), run_id)
        view["records"] = investigation_service.investigation_view(
            self.db, self.world.tenant.id, run_id
        )
        view["controller"] = controller
        return view


@pytest.fixture
def inv(
    db: Database,
    fake_github: FakeGitHubServer,
    github_client: Any,
    embedder: CachedEmbedder,
    hf_datasets: IssueSet,
) -> Iterator[Investigations]:
    fake_github.add_repo(REPO, REPO_LABELS)
    world = make_world(db, repository=REPO)
    Indexer(db, embedder).upsert(world.tenant.id, subset(hf_datasets))
    pool = db.autocommit_pool()
    try:
        searcher = Searcher(db, embedder)
        yield Investigations(db, world, fake_github, github_client, pool, searcher, hf_datasets)
    finally:
        pool.close()


def cite_relevant(at_least: float, **answer: Any) -> Any:
    """A model that cites every snippet shown with at least ``at_least`` relevance."""

    def respond(messages: Sequence[ChatMessage], kind: str) -> Any:
        if kind == "text":
            return "The cited reports describe the same Windows CI failure."
        shown = re.findall(r"id=(S\d+) relevance=([0-9.]+)", messages[1].content)
        cited = [sid for sid, score in shown if float(score) >= at_least]
        return {
            "root_cause": "A dependency update broke the Windows CI job, as in the cited reports.",
            "severity": "medium",
            "missing_info": ["the failing test's output"],
            "recommended_next_steps": ["pin the dependency that changed, as in the cited fixes"],
            "citations": cited or ["S1"],
            "suggested_labels": ["bug"],
            "duplicate_of": None,
            **answer,
        }

    return respond


def issue_url(number: str) -> str:
    return f"https://github.com/{REPO}/issues/{number}"


@on_synthetic_and_real_hf_data
def test_none_provider_proposes_related_issues_with_links_and_citations(
    inv: Investigations,
) -> None:
    view = inv.run(None, SPARSE)
    assert (view["classification"], view["branch"]) == ("ai_investigation", "ai_investigation")
    assert view["route_reason"] == "review: every gate passed"
    [record] = view["records"]["investigations"]
    assert record["provider"] == "none" and record["model"] is None
    assert record["diagnosis"] is None and view["records"]["model_calls"] == []
    snippets = {s["id"]: s for s in record["snippets"]}
    cited = [s for s in record["snippets"] if s["relevance"] >= FLOOR]
    assert {s["external_id"] for s in cited} >= set(RELATED[:1])  # the closest report is there
    assert all(s["external_id"] != SPARSE for s in snippets.values())

    action = view["proposal"]["action"]
    comment = action["comment"]
    assert comment.startswith(f"ResolveFlow found {len(cited)} earlier report")
    assert "No language model was used" in comment
    assert "reviewed by a person" in comment and "resolveflow:action" not in comment
    for snippet in cited:  # each citation is a link to the cited issue or pull request
        assert snippet["url"] == issue_url(snippet["external_id"]).replace(
            "/issues/", "/pull/" if snippet["kind"] == "pull" else "/issues/"
        )
        assert f"- [#{snippet['external_id']}]({snippet['url']})" in comment
    heads = re.findall(r"^- \[#(\d+)\]\(", comment, re.MULTILINE)
    assert heads == [s["external_id"] for s in cited]  # and nothing else is listed
    assert f"fixed by [#3840](https://github.com/{REPO}/pull/3840)" in comment
    assert action["labels"] == ["bug"]  # what the related reports carry, allowed by the policy
    assert view["proposal"]["author_kind"] == "workflow"
    assert action["target"] == {"issue": int(SPARSE), "repository": REPO}
    gates = {g["name"]: g["passed"] for g in record["gates"]}
    assert gates == dict.fromkeys(("groundedness", "risk", "permission", "duplicate_sanity"), True)
    assert inv.fake.writes_received == 0


@on_synthetic_and_real_hf_data
def test_scripted_model_approvable_diagnosis_runs_through_the_whole_graph(
    inv: Investigations,
) -> None:
    model = ScriptedModel(responder=cite_relevant(0.3))
    view = inv.run(model, SPARSE)
    assert view["route_reason"] == "review: every gate passed"
    [diagnosis_call, critique_call] = model.calls
    assert diagnosis_call[0] == "structured:Diagnosis" and critique_call[0] == "text"
    assert diagnosis_call[1] != critique_call[1]  # a separate call with its own conversation
    action = view["proposal"]["action"]
    assert view["proposal"]["author_kind"] == "model"
    assert action["labels"] == ["bug"]
    assert "**Likely cause:** A dependency update broke the Windows CI job" in action["comment"]
    assert f"[#3839]({issue_url('3839')})" in action["comment"]
    record = view["records"]["investigations"][0]
    assert record["critique"].startswith("The cited reports")
    assert [c["outcome"] for c in view["records"]["model_calls"]] == ["ok", "ok"]

    approver = inv.world.approver(inv.db)
    view["controller"].approve(approver, uuid.UUID(view["run_id"]), view["digest"])
    final = run_service.describe_run(inv.db, approver, uuid.UUID(view["run_id"]))
    assert final["status"] == "completed"
    [posted] = inv.fake.comments(REPO, int(SPARSE))
    assert posted["body"].startswith(action["comment"] + "\n\n<!-- resolveflow:action=")
    assert inv.fake.issue_labels(REPO, int(SPARSE)) == ["bug"]


def test_scripted_model_high_severity_diagnosis_escalates_to_a_person(
    inv: Investigations,
) -> None:
    view = inv.run(ScriptedModel(responder=cite_relevant(0.3, severity="high")), SPARSE)
    assert view["route_reason"] == "review escalated: risk: high severity always goes to a person"
    action = view["proposal"]["action"]
    assert action == {
        "comment": None,
        "kind": "github.issue",
        "labels": ["needs-triage"],
        "target": {"issue": int(SPARSE), "repository": REPO},
    }
    assert view["detail"]["notes"] == ["escalated: risk: high severity always goes to a person"]
    record = view["records"]["investigations"][0]
    assert record["outcome"] == "escalate" and record["diagnosis"]["severity"] == "high"
    events = [e for e in view["timeline"] if e["event"] == "run.investigated"]
    assert events and events[0]["details"]["outcome"] == "escalate"
    assert inv.fake.writes_received == 0


@on_synthetic_and_real_hf_data
def test_relevance_floor_real_but_unrelated_snippets_make_the_review_escalate(
    inv: Investigations,
) -> None:
    # The index holds nothing about SuperGLUE's wsc: retrieval still returns its best five, all
    # real issues, all below the floor. A model that cites them anyway is stopped by the gate.
    view = inv.run(ScriptedModel(responder=cite_relevant(0.0)), UNRELATED)
    record = view["records"]["investigations"][0]
    assert len(record["snippets"]) == 5
    assert all(s["relevance"] < FLOOR for s in record["snippets"])
    assert record["diagnosis"]["citations"] == [s["id"] for s in record["snippets"]]
    assert view["route_reason"].startswith(
        f"review escalated: groundedness: below the relevance floor {FLOOR:.2f}"
    )
    assert view["proposal"]["action"]["labels"] == ["needs-triage"]
    assert view["proposal"]["action"]["comment"] is None

    # Without a model, the same retrieval proposes nothing to cite: escalated as well.
    plain = inv.run(None, UNRELATED)
    assert plain["route_reason"] == "review escalated: groundedness: no citation"


def test_model_calls_are_recorded_and_the_daily_budget_escalates(inv: Investigations) -> None:
    with FakeChatServer() as server:
        answer = json.dumps(
            {
                "root_cause": "The Windows job broke after a dependency release.",
                "severity": "low",
                "missing_info": [],
                "recommended_next_steps": ["pin the dependency"],
                "citations": ["S1"],
                "suggested_labels": ["bug"],
                "duplicate_of": None,
            }
        )
        server.queue(Reply(answer, prompt_tokens=900, completion_tokens=80))
        model = OpenAIChatModel(server.base_url, "sk-x", "fake-model", timeout_seconds=5)
        # A budget of one call a day: the diagnosis is made, the critique is not.
        first = inv.run(model, SPARSE, daily_model_calls=1)
        second = inv.run(model, "4146", daily_model_calls=1)  # another sparse report, same day
        model.close()
    calls = first["records"]["model_calls"]
    assert [(c["purpose"], c["outcome"]) for c in calls] == [
        ("diagnosis", "ok"),
        ("critique", "budget_spent"),
    ]
    ok = calls[0]
    assert (ok["provider"], ok["model"], ok["prompt_tokens"], ok["completion_tokens"]) == (
        "openai",
        "fake-model",
        900,
        80,
    )
    assert ok["latency_ms"] > 0 and ok["attempts"] == 1 and ok["error"] is None
    assert calls[1]["latency_ms"] == 0 and "budget of 1 model calls" in calls[1]["error"]
    record = first["records"]["investigations"][0]
    assert record["critique"] is None
    assert any(n.startswith("no critique: the daily budget") for n in first["detail"]["notes"])

    assert second["route_reason"] == (
        "review escalated: budget: the daily budget of 1 model calls of the person who "
        "started this run is spent"
    )
    assert [c["outcome"] for c in second["records"]["model_calls"]] == ["budget_spent"]
    assert second["proposal"]["action"]["labels"] == ["needs-triage"]
    assert len(server.requests) == 1  # nothing was sent once the budget was spent


def test_a_model_that_fails_closes_the_branch_on_a_person(inv: Investigations) -> None:
    view = inv.run(ScriptedModel(["{not json", '{"severity": "low"}']), SPARSE)
    assert view["route_reason"].startswith(
        "review escalated: model_output: diagnosis: the answer does not match the schema"
    )
    [call] = view["records"]["model_calls"]
    assert (call["outcome"], call["attempts"]) == ("invalid_output", 1)
    assert view["proposal"]["action"]["labels"] == ["needs-triage"]


def test_a_model_that_never_stops_or_ignores_the_schema_escalates_and_posts_nothing(
    inv: Investigations,
) -> None:
    """Issue 30, at the outer edge: a server that would answer only after 30 s, then one whose
    every answer runs to its output budget (a looping model, cut), then one that ignores the
    schema. The run is held for one deadline, not the server's time; each escalates to a
    person; nothing is posted."""
    with FakeChatServer() as server:
        server.queue(Slow(30.0, Reply(GOOD_DIAGNOSIS)))
        model = OpenAIChatModel(
            server.base_url, "sk-x", "looping", timeout_seconds=60, deadline_seconds=1.0
        )
        slow = inv.run(model, SPARSE)
        [call] = slow["records"]["model_calls"]
        assert (call["purpose"], call["outcome"]) == ("diagnosis", "timeout")
        # The 1 s deadline ended it, not the server's 30 s (room left for a loaded machine).
        assert call["latency_ms"] < 10_000
        assert slow["route_reason"].startswith("review escalated: model_output")

        cut = Reply(GOOD_DIAGNOSIS, finish_reason="length")
        server.queue(cut, cut, cut, cut)
        looping = inv.run(model, SPARSE)
        model.close()
    with FakeChatServer() as server:  # a server that ignores the schema: another shape, always
        other_shape = Reply(json.dumps({"answer": "4790", "severity": "4790"}))
        server.queue(*[other_shape] * 4)
        model = OpenAIChatModel(server.base_url, "sk-x", "schemaless", deadline_seconds=30.0)
        ignoring = inv.run(model, SPARSE)
        model.close()
    [call] = looping["records"]["model_calls"]
    assert (call["purpose"], call["outcome"]) == ("diagnosis", "invalid_output")
    assert "cut at its output budget" in looping["route_reason"], looping["route_reason"]
    [call] = ignoring["records"]["model_calls"]
    assert (call["purpose"], call["outcome"]) == ("diagnosis", "invalid_output")
    assert "does not match the schema" in ignoring["route_reason"], ignoring["route_reason"]
    for view in (slow, looping, ignoring):
        assert view["status"] == "awaiting_approval"
        assert view["proposal"]["action"]["labels"] == ["needs-triage"]
        assert view["proposal"]["action"]["comment"] is None
    assert inv.fake.writes_received == 0


def test_investigation_records_are_tenant_scoped_and_immutable(
    inv: Investigations, superuser: Any
) -> None:
    view = inv.run(None, SPARSE)
    other = make_world(inv.db, tenant="globex", repository="globex/app")
    seen = investigation_service.investigation_view(
        inv.db, other.tenant.id, uuid.UUID(view["run_id"])
    )
    assert seen == {"investigations": [], "model_calls": []}
    from resolveflow.errors import NotAuthorized

    with pytest.raises(NotAuthorized), inv.db.tenant(inv.world.tenant.id) as conn:
        conn.execute("UPDATE investigations SET outcome = 'approve'")
    # A row claiming approval with a failed gate cannot be written, even by the owner.
    import psycopg

    with pytest.raises(psycopg.errors.CheckViolation):
        superuser.execute(
            "INSERT INTO investigations (tenant_id, run_id, provider, relevance_floor, snippets,"
            " gates, outcome, reason) VALUES (%s, %s, 'none', 0.25, '[]',"
            ' \'[{"name": "risk", "passed": false, "reason": "high"}]\', \'approve\', \'x\')',
            (inv.world.tenant.id, uuid.UUID(view["run_id"])),
        )


def test_a_retrieval_failure_escalates_without_calling_the_model(inv: Investigations) -> None:
    from resolveflow.adapters.embedder.hashing import HashingEmbedder

    # The index was built with MiniLM; a searcher with another embedder cannot use it.
    model = ScriptedModel([])
    view = inv.run(model, SPARSE, searcher=Searcher(inv.db, HashingEmbedder()))
    assert view["route_reason"].startswith("review escalated: retrieval: retrieval failed:")
    assert "index rebuild" in view["route_reason"]
    assert model.calls == [] and view["proposal"]["action"]["labels"] == ["needs-triage"]


# --- a real weak model (issue 30): llama.cpp's server on SmolLM2-135M ----------------------------

pytest_plugins = ["fixtures_llamacpp"]


@pytest.mark.real_model
def test_a_real_small_model_is_bounded_reviewed_and_posts_nothing_unapproved(
    inv: Investigations, llamacpp_server: Any, llamacpp_model: OpenAIChatModel
) -> None:
    """The product's own investigation with a real model that writes plausible nonsense: each
    call ends inside its deadline (none hangs or loops; the output budget cuts a looping answer),
    whatever it says is judged by the review in code, and nothing reaches GitHub before a person
    approves. SmolLM2's answers vary with the machine's threads, so the test holds for every
    outcome the code allows, and names which one happened."""
    view = inv.run(llamacpp_model, SPARSE)
    calls = view["records"]["model_calls"]
    # Shown with -s: what the real model did, for the closing figures (time, tokens, outcome).
    print("real model:", view["route_reason"], [
        (c["purpose"], c["outcome"], c["latency_ms"], c["completion_tokens"]) for c in calls
    ])  # fmt: skip
    assert calls and calls[0]["purpose"] == "diagnosis", calls
    assert {c["outcome"] for c in calls} <= {"ok", "invalid_output", "timeout"}, calls
    assert all(c["provider"] == "openai" and c["model"] == llamacpp_server.model for c in calls)
    assert view["status"] == "awaiting_approval", view["route_reason"]
    reason = view["route_reason"]
    assert reason == "review: every gate passed" or reason.startswith("review escalated: "), reason
    if reason.startswith("review escalated"):  # the person gets the triage label, no comment
        assert view["proposal"]["action"]["labels"] == ["needs-triage"]
        assert view["proposal"]["action"]["comment"] is None
    assert inv.fake.writes_received == 0  # nothing is written until a person approves


def _decided_duplicate_suggestion(inv: Investigations, issue: int, score: float, yes: bool) -> None:
    """A past duplicate suggestion on the repository, as a run makes one (its run, branch and
    investigation, best related document at ``score``), then approved or rejected."""
    db, world = inv.db, inv.world
    run_id = classified_run(db, world, issue, repository=REPO, branch="ai_investigation")
    with db.tenant(world.tenant.id) as conn:
        model_call_store.insert_investigation(
            conn,
            tenant_id=world.tenant.id,
            run_id=run_id,
            provider="none",
            model=None,
            relevance_floor=FLOOR,
            snippets=[{"id": "S1", "relevance": score}, {"id": "S2", "relevance": score / 2}],
            diagnosis=None,
            critique=None,
            gates=[{"name": "groundedness", "passed": True, "detail": "test"}],
            outcome="approve",
            reason="test",
        )
    proposal = proposal_service.create_proposal(
        db,
        world.requester(db),
        repository=REPO,
        issue=issue,
        comment="ResolveFlow found earlier reports.",
        labels=[],
        run_id=run_id,
        author_kind="workflow",
    )
    if yes:
        approval_service.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)
    else:
        approval_service.reject(db, world.approver(db), proposal.id, "not a duplicate")


@on_synthetic_and_real_hf_data
def test_a_repositorys_decisions_raise_its_duplicate_floor_and_the_proposal_says_so(
    inv: Investigations,
) -> None:
    first = inv.run(None, SPARSE)
    relevances = sorted(
        (s["relevance"] for s in first["records"]["investigations"][0]["snippets"]),
        reverse=True,
    )
    cited_before = [r for r in relevances if r >= FLOOR]
    assert len(cited_before) >= 2, relevances  # the test needs two related reports to tell
    # The team rejected what scored just above the default and approved what scored between
    # this issue's best two related reports: the fitted floor lies between them.
    between = (cited_before[0] + cited_before[1]) / 2
    for n in range(20):
        _decided_duplicate_suggestion(inv, 1000 + n, (FLOOR + cited_before[1]) / 2, yes=False)
    for n in range(15):
        _decided_duplicate_suggestion(inv, 2000 + n, between, yes=True)

    again = inv.run(None, SPARSE)
    [record] = again["records"]["investigations"]
    assert record["relevance_floor"] == pytest.approx(between)
    comment = again["proposal"]["action"]["comment"]
    assert comment.startswith(
        "ResolveFlow found 1 earlier report that looks"
    )  # only the best one now
    notes = "; ".join(again["detail"]["notes"])  # the run's page and `runs show` print them
    assert f"relevance floor {between:.2f} on this repository (default {FLOOR:.2f})" in notes
    assert "fitted from 35 decisions (15 approved)" in notes

    # Its page: the score it was made with, how that band fared here, the floor it met.
    view = proposal_service.describe(
        inv.db, inv.world.approver(inv.db), uuid.UUID(again["proposal"]["id"])
    )
    like = view["like_this"]
    assert like["kind"] == "duplicate" and (like["approved"], like["rejected"]) == (15, 20)
    score = like["score"]
    assert score["value"] == pytest.approx(cited_before[0], abs=1e-4)
    assert score["floor"] == pytest.approx(between)
    low, high = score["band"]
    assert low <= cited_before[0] < high or cited_before[0] == high == 1.0
    in_band = 15 if low <= between < high else 0
    assert score["approved"] == in_band and score["rejected"] == 0


def _quiet_policy(mode: str) -> PolicyFile:
    return parse_policy(
        f'[repositories."{REPO}"]\nextra_labels = {{ ai_investigation = ["bug", "enhancement"] }}\n'
        f'[repositories."{REPO}".suggestions]\nduplicate = "{mode}"\n'
    )


def test_duplicate_suggestions_off_make_no_proposal_and_the_run_says_why(
    inv: Investigations,
) -> None:
    model = ScriptedModel(responder=cite_relevant(0.0))
    view = inv.run(model, SPARSE, policy=_quiet_policy("off"))
    assert view["proposal"] is None and view["status"] == "no_action"
    # Nothing it found could be proposed: neither retrieval nor the model was asked.
    assert view["records"] == {"investigations": [], "model_calls": []}
    assert f"duplicate suggestions are off for {REPO} (policy file)" in "; ".join(
        view["detail"]["notes"]
    )
    assert inv.fake.writes_received == 0


def test_duplicate_suggestions_in_the_digest_skip_the_inbox_and_are_still_approvable(
    inv: Investigations,
) -> None:
    view = inv.run(None, SPARSE, policy=_quiet_policy("digest"))
    proposal_id = view["proposal"]["id"]
    approver = inv.world.approver(inv.db)
    listed = views.inbox(inv.db, approver)["items"]
    assert all(item.get("proposal_id") != proposal_id for item in listed)
    assert all(item.get("run_id") != view["run_id"] for item in listed)
    found = quiet_service.digest(inv.db, approver)
    entries = [i for d in found.days for g in d.groups for i in g.items]
    assert [str(i.proposal_id) for i in entries] == [proposal_id]
    # A person who opens it from the digest approves it by its digest, as any other; posted once.
    view["controller"].approve(approver, uuid.UUID(view["run_id"]), view["digest"])
    final = run_service.describe_run(inv.db, approver, uuid.UUID(view["run_id"]))
    assert final["status"] == "completed", final["status"]
    assert len(inv.fake.comments(REPO, int(SPARSE))) == 1
