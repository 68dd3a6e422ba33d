"""Pure parts of retrieval: fusion, metrics, fixes links, relevance, corpus parsing, labels."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import pytest

from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.embedder.protocol import EmbeddingSpace
from resolveflow.domain.front_matter import front_matter
from resolveflow.errors import InvalidInput
from resolveflow.retrieval.fusion import FusionParams, fuse, group_by_document
from resolveflow.retrieval.metrics import label_report, ranking_report
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.relevance import relevance
from resolveflow.retrieval.sources import read_corpus
from resolveflow.triage.labels import Example, LabelModel, topical

A, B, C = (UUID(int=i) for i in (1, 2, 3))


@dataclass(frozen=True)
class _Row:
    """A candidate chunk as the fusion reads it (``fusion.CandidateRow``)."""

    document_id: UUID
    chunk_id: int
    distance: float
    vrank: int | None
    lexical_score: float
    lrank: int | None
    kind: str = "issue"


def _row(
    doc: UUID, chunk: int, distance: float, vrank: int | None, lex: float, lrank: int | None
) -> _Row:
    return _Row(doc, chunk, distance, vrank, lex, lrank)


def test_documents_are_ranked_by_their_best_chunk_and_appear_once() -> None:
    rows = [
        _row(A, 1, 0.50, 3, 0.0, None),
        _row(A, 2, 0.10, 1, 0.2, 2),  # A's best chunk
        _row(B, 3, 0.20, 2, 0.9, 1),
        _row(C, 4, 0.70, None, 0.1, 3),  # found by words only
    ]
    docs = {d.document_id: d for d in group_by_document(rows)}
    assert len(docs) == 3
    assert docs[A].best.chunk_id == 2 and docs[A].cosine == pytest.approx(0.9)
    assert (docs[A].vector_rank, docs[B].vector_rank, docs[C].vector_rank) == (1, 2, None)
    assert (docs[B].lexical_rank, docs[A].lexical_rank, docs[C].lexical_rank) == (1, 2, 3)


def test_rrf_by_hand() -> None:
    rows = [_row(A, 1, 0.1, 1, 0.0, None), _row(B, 2, 0.2, 2, 0.5, 1)]
    ranked = fuse(group_by_document(rows), FusionParams("rrf", 1.0, 1.0, 60))
    # A: 1/61 = 0.016393; B: 1/62 + 1/61 = 0.032522
    assert [d.document_id for d in ranked] == [B, A]
    assert ranked[0].fused == pytest.approx(1 / 62 + 1 / 61)
    assert ranked[1].fused == pytest.approx(1 / 61)


def test_weighted_fusion_by_hand() -> None:
    rows = [_row(A, 1, 0.1, 1, 0.1, 2), _row(B, 2, 0.3, 2, 0.4, 1)]
    ranked = fuse(group_by_document(rows), FusionParams("weighted", 0.9, 0.1))
    # A: 0.9*0.9 + 0.1*(0.1/0.4) = 0.835; B: 0.9*0.7 + 0.1*1 = 0.73
    assert [d.document_id for d in ranked] == [A, B]
    assert ranked[0].fused == pytest.approx(0.835)
    assert ranked[1].fused == pytest.approx(0.73)


def test_ranking_report_by_hand() -> None:
    report = ranking_report([1, 2, 6, None])
    assert report.n == 4
    assert report.mrr_at_5 == pytest.approx((1 + 0.5 + 0 + 0) / 4)
    assert (report.recall_at_1, report.recall_at_5, report.recall_at_10) == (0.25, 0.5, 0.75)


def test_label_report_by_hand() -> None:
    cases = [({"bug"}, {"bug"}), ({"bug"}, {"enhancement"}), (set(), {"bug", "docs"})]
    report = label_report(cases)
    # tp 1, proposed 2, gold 4 -> P 0.5, R 0.25, F1 1/3
    assert (report.n, report.abstained) == (3, 1)
    assert report.precision == pytest.approx(0.5)
    assert report.recall == pytest.approx(0.25)
    assert report.f1 == pytest.approx(1 / 3)


def test_fixes_links_only_from_pull_requests_and_same_repository() -> None:
    pull = SourceDocument(
        "github:acme/widgets",
        "9",
        "pull",
        "Fix crash",
        "Fixes #12, closes acme/widgets#3 and resolves other/repo#4. Fixed: #7",
        repository="acme/widgets",
    )
    assert pull.fixes() == ("3", "7", "12")
    issue = SourceDocument("s", "1", "issue", "t", "fixes #2")
    assert issue.fixes() == ()


def test_content_hash_changes_with_content_only() -> None:
    doc = SourceDocument("s", "1", "issue", "t", "body", labels=("b", "a"))
    same = SourceDocument("s", "1", "issue", "t", "body", labels=("a", "b"))
    other = SourceDocument("s", "1", "issue", "t", "body!", labels=("a", "b"))
    assert doc.content_hash() == same.content_hash() != other.content_hash()


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(InvalidInput):
        SourceDocument("s", "1", "wiki", "t", "b")


def test_relevance_is_monotonic_and_bounded() -> None:
    local = EmbeddingSpace("local", "sentence-transformers/all-MiniLM-L6-v2", 384)
    values = [relevance(local, c / 10) for c in range(-10, 11)]
    assert values == sorted(values)
    assert all(0.0 <= v <= 1.0 for v in values)
    fake = HashingEmbedder().space
    assert relevance(fake, 0.42) == pytest.approx(0.42)
    assert relevance(fake, -0.3) == 0.0


def test_corpus_lines_are_validated_with_their_line_number(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    good = {"id": 1, "title": "t", "body": None, "created_at": "2020-01-02T03:04:05Z", "labels": []}
    path.write_text(json.dumps(good) + "\n\n" + "{not json}\n", encoding="utf-8")
    docs = read_corpus(path, "src")
    first = next(docs)
    assert (first.external_id, first.body, first.created_at.year) == ("1", "", 2020)  # type: ignore[union-attr]
    with pytest.raises(InvalidInput, match="line 3"):
        next(docs)


def test_front_matter_marks_runbooks() -> None:
    fields, rest = front_matter("---\nrunbook: disk-full\ntitle: 'Disk full'\n---\n# Steps\n")
    assert fields == {"runbook": "disk-full", "title": "Disk full"}
    assert rest == "# Steps\n"
    assert front_matter("no front matter") == ({}, "no front matter")


def test_non_topical_labels_are_excluded_by_policy() -> None:
    assert topical({"bug", "duplicate", "Good First Issue", "help wanted", "wontfix"}) == {"bug"}


def test_label_model_proposes_only_allowed_labels_and_abstains_when_unsure() -> None:
    examples = [Example(f"crash traceback error {i}", frozenset({"bug"})) for i in range(6)]
    examples += [
        Example(f"feature request please add {i}", frozenset({"enhancement"})) for i in range(6)
    ]
    examples += [Example("rare thing", frozenset({"rare"}))]  # too few examples to learn
    model = LabelModel.train(examples)
    assert model.labels == ["bug", "enhancement"]
    suggestion = model.suggest_many(["crash with a traceback error"])[0]
    assert suggestion is not None and suggestion.label == "bug"
    only_enhancement = model.suggest_many(["crash with a traceback error"], allowed={"enhancement"})
    assert only_enhancement[0] is None or only_enhancement[0].label == "enhancement"
    assert model.suggest_many(["crash"], allowed=set()) == [None]
    assert model.suggest_many(["crash traceback error"], min_probability=1.01) == [None]


def test_empty_history_learns_nothing() -> None:
    model = LabelModel.train([])
    assert model.labels == [] and model.suggest_many(["anything"]) == [None]
