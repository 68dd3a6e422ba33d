"""``eval answers`` keeps its corpus's index for the next run on the same files (a scratch tenant
found by the corpus's key), makes a new one when a file changes, keeps only the last few, and its
scratch tenants are never listed nor picked as the only tenant. The tiny corpus is
tests/data/ask-passages-mini; the hashing embedder keeps it fast."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.rows import dict_row

from resolveflow.accounts import admin
from resolveflow.accounts.scratch import kept_index, scratch_tenant
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.embedder.protocol import EmbeddingSpace
from resolveflow.ask.evaluation import evaluate_answers
from resolveflow.cli.common import tenant_name
from resolveflow.retrieval import corpus_key as keys
from resolveflow.store import migrate as migrations
from resolveflow.store.database import Database

MINI = Path(__file__).parents[2] / "data" / "ask-passages-mini"


def corpus_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    shutil.copytree(MINI / "corpus", folder)
    return folder


def chunk_ids(db: Database, tenant_id: UUID) -> list[int]:
    with db.tenant(tenant_id) as conn:
        rows = conn.execute("SELECT id FROM chunks ORDER BY id").fetchall()
    return [row["id"] for row in rows]


def only_scratch(db: Database) -> UUID:
    [tenant] = admin.scratch_tenants(db)
    return tenant.id


def test_a_second_run_on_the_same_files_indexes_nothing(db: Database, tmp_path: Path) -> None:
    corpus, questions = corpus_copy(tmp_path), MINI / "questions.jsonl"
    first, first_outcomes = evaluate_answers(db, HashingEmbedder(), corpus, questions)
    assert not first.index_reused
    tenant_id = only_scratch(db)
    indexed = chunk_ids(db, tenant_id)
    assert indexed  # the index is kept, not removed with the run
    assert first.passage_labelled == 3 and first.passage_right is not None

    again, again_outcomes = evaluate_answers(db, HashingEmbedder(), corpus, questions)
    assert again.index_reused
    assert only_scratch(db) == tenant_id and chunk_ids(db, tenant_id) == indexed
    assert [o.rank for o in again_outcomes] == [o.rank for o in first_outcomes]
    assert again.mrr_at_5 == first.mrr_at_5

    # A copy of the same files elsewhere is the same corpus.
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(corpus, elsewhere)
    assert evaluate_answers(db, HashingEmbedder(), elsewhere, questions)[0].index_reused


def test_a_kept_index_is_calibrated_again_by_each_run(db: Database, tmp_path: Path) -> None:
    """The calibration is this code's measure, not the one an earlier run's code stored."""
    corpus, questions = corpus_copy(tmp_path), MINI / "questions.jsonl"
    evaluate_answers(db, HashingEmbedder(), corpus, questions)
    tenant_id = only_scratch(db)
    sql = "SELECT unrelated, related FROM ask_calibrations WHERE tenant_id = %(t)s"
    with db.tenant(tenant_id) as conn:
        measured = conn.execute(sql, {"t": tenant_id}).fetchone()
        conn.execute(
            "UPDATE ask_calibrations SET unrelated = -0.9, related = 0.9 WHERE tenant_id = %(t)s",
            {"t": tenant_id},
        )
    assert evaluate_answers(db, HashingEmbedder(), corpus, questions)[0].index_reused
    with db.tenant(tenant_id) as conn:
        assert conn.execute(sql, {"t": tenant_id}).fetchone() == measured


def test_a_changed_file_makes_a_new_index(db: Database, tmp_path: Path) -> None:
    corpus, questions = corpus_copy(tmp_path), MINI / "questions.jsonl"
    evaluate_answers(db, HashingEmbedder(), corpus, questions)
    before = only_scratch(db)
    faq = corpus / "faq.md"
    faq.write_text(faq.read_text(encoding="utf-8") + "\nSweeping is safe.\n", encoding="utf-8")
    result, _ = evaluate_answers(db, HashingEmbedder(), corpus, questions)
    assert not result.index_reused
    kept = {t.id for t in admin.scratch_tenants(db)}
    assert len(kept) == 2 and before in kept  # the earlier corpus's index stays, within the bound


def test_only_the_last_used_indexes_are_kept_and_a_failed_one_never(db: Database) -> None:
    made: list[UUID] = []
    for key in ("a", "b", "c"):
        with kept_index(db, key, keep=2) as index:
            assert not index.reused
            made.append(index.tenant_id)
    assert {t.id for t in admin.scratch_tenants(db)} == {made[1], made[2]}
    with kept_index(db, "b", keep=2) as index:  # used again: now the most recent
        assert index.reused and index.tenant_id == made[1]
    with kept_index(db, "d", keep=2):
        pass
    assert made[2] not in {t.id for t in admin.scratch_tenants(db)}
    with pytest.raises(RuntimeError), kept_index(db, "e", keep=2):
        raise RuntimeError("indexing stopped half way")
    with kept_index(db, "e", keep=2) as index:
        assert not index.reused  # the half-built index was not kept


def test_the_key_is_the_files_the_embedder_and_the_ingestion_code(tmp_path: Path) -> None:
    corpus = corpus_copy(tmp_path)
    space = HashingEmbedder().space
    key = keys.corpus_key(corpus, space)
    assert keys.corpus_key(MINI / "corpus", space) == key
    other = EmbeddingSpace(space.provider, space.model, space.dimensions + 1)
    assert keys.corpus_key(corpus, other) != key
    (corpus / "faq.md").rename(corpus / "faq2.md")
    assert keys.corpus_key(corpus, space) != key
    (corpus / "faq2.md").rename(corpus / "faq.md")
    page = corpus / "guide.html"
    page.write_bytes(page.read_bytes().replace(b"garden", b"orchard"))
    assert keys.corpus_key(corpus, space) != key
    # What shapes the stored chunks is in the index format; ranking and answering are not.
    modules = set(keys._imported(keys.INGESTION_MODULES))
    assert {
        "resolveflow.retrieval.chunking",
        "resolveflow.retrieval.html_text",
        "resolveflow.retrieval.loaders",
        "resolveflow.retrieval.extraction_worker",
        "resolveflow.store.documents",
    } <= modules
    assert not {"resolveflow.retrieval.search", "resolveflow.ask.answering"} & modules


def test_a_scratch_tenant_is_never_the_only_tenant(db: Database, tmp_path: Path) -> None:
    opened = SimpleNamespace(db=db)  # what picking the tenant reads of the opened app
    admin.add_tenant(db, "acme")
    evaluate_answers(db, HashingEmbedder(), corpus_copy(tmp_path), MINI / "questions.jsonl")
    with scratch_tenant(db):  # and one of a run still going
        assert len(admin.scratch_tenants(db)) == 2
        assert tenant_name(opened, None) == "acme"  # type: ignore[arg-type]
        assert [t.name for t in admin.real_tenants(db)] == ["acme"]


def test_the_migration_marks_the_scratch_tenants_made_before_it(
    pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"t_pre_{uuid.uuid4().hex[:10]}"
    root = pg_server.get_uri()
    with psycopg.connect(root, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    try:
        earlier = [m for m in migrations.available_migrations() if m.version < "0042"]
        with psycopg.connect(pg_server.get_uri(name), autocommit=True, row_factory=dict_row) as c:
            with monkeypatch.context() as patch:
                patch.setattr(migrations, "available_migrations", lambda: earlier)
                migrations.upgrade(c)
            c.execute("INSERT INTO tenants (name) VALUES ('acme'), ('rf-eval-0123456789ab')")
            migrations.upgrade(c)
            rows = c.execute("SELECT name, scratch FROM tenants ORDER BY name").fetchall()
        assert [(r["name"], r["scratch"]) for r in rows] == [
            ("acme", False),
            ("rf-eval-0123456789ab", True),
        ]
    finally:
        with psycopg.connect(root, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]
