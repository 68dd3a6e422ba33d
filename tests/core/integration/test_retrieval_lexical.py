"""The full-text branch: BM25 scores read from the postings (idf × impact), kept by triggers."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from tests.core.integration.test_retrieval_index import doc
from tests.fixtures_migrator import migrator_database

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.ask.store import answers as answers_store
from resolveflow.bootstrap.schema import migrate
from resolveflow.retrieval.fusion import FusionParams
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.store import documents as store
from resolveflow.store import migrate as migrations
from resolveflow.store.database import Database

WORDS_ONLY = SearchParams(fusion=FusionParams("weighted", 0.0, 1.0))


def _corpus() -> list:  # type: ignore[type-arg]
    docs = [doc(f"p{i}", f"Ticket {i}", f"The printer jams on page {i}.") for i in range(8)]
    docs.append(doc("title", "Printer offline", "It shows an error on start."))
    docs.append(doc("rare", "Ticket rare", "A quokka chewed the cable."))
    return docs


def test_a_rare_term_outweighs_a_common_one_and_a_title_counts_twice(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    Indexer(db, HashingEmbedder()).upsert(tenant, _corpus())
    searcher = Searcher(db, HashingEmbedder(), WORDS_ONLY)
    hits = searcher.search(tenant, "printer quokka", k=10)
    assert hits[0].external_id == "rare"
    # "printer" is in 9 of 10 chunks, "quokka" in 1: idf ln(1 + 1.5/9.5) against ln(1 + 9.5/1.5).
    ratio = hits[0].scores.lexical / max(h.scores.lexical for h in hits[1:])
    assert ratio > 3
    printer_only = [h.external_id for h in hits if h.external_id != "rare"]
    assert printer_only[0] == "title"  # same term, but in the title


def test_postings_carry_the_impacts_of_the_current_text_after_a_reindex(
    db: Database,
    superuser,  # type: ignore[no-untyped-def]
) -> None:
    tenant = admin.add_tenant(db, "acme").id
    indexer = Indexer(db, HashingEmbedder())
    indexer.upsert(tenant, [doc("a", "Printer", "paper paper paper jam")])
    indexer.upsert(tenant, [doc("a", "Printer", "toner smear on every page")])
    rows = superuser.execute(
        "SELECT t.lexeme, t.impact, i.impact FROM chunk_terms t "
        "JOIN chunks c ON c.id = t.chunk_id "
        "JOIN rf_term_impacts(c.tsv) AS i ON i.lexeme = t.lexeme WHERE t.tenant_id = %s",
        [tenant],
    ).fetchall()
    lexemes = {lexeme for lexeme, _, _ in rows}
    assert "toner" in lexemes and "paper" not in lexemes
    assert all(stored == computed and stored > 0 for _, stored, computed in rows)
    postings = superuser.execute(
        "SELECT count(*) FROM chunk_terms WHERE tenant_id = %s", [tenant]
    ).fetchone()
    assert postings is not None and postings[0] == len(rows)
    # By hand: the head chunk's text repeats the title, so "printer" has one title (A, counts 2)
    # and one text occurrence: tf 3; "toner" tf 1; five distinct lexemes ("on" is a stop word).
    length_part = 1.2 * (0.25 + 0.75 * 5 / 80)
    impacts = {lexeme: stored for lexeme, stored, _ in rows}
    assert len(impacts) == 5
    assert math.isclose(impacts["printer"], 3 * 2.2 / (3 + length_part), rel_tol=1e-5)
    assert math.isclose(impacts["toner"], 1 * 2.2 / (1 + length_part), rel_tol=1e-5)


def test_the_postings_budget_keeps_the_rarest_terms_and_always_the_rarest_one(
    db: Database,
) -> None:
    tenant = admin.add_tenant(db, "acme").id
    docs = [*_corpus(), doc("cable", "Ticket cable", "The cable is loose.")]
    Indexer(db, HashingEmbedder()).upsert(tenant, docs)
    with db.tenant(tenant) as conn:

        def terms(budget: int) -> list[str]:
            query = store.lexical_query(conn, tenant, "printer quokka cable", 24, 1000, 11, budget)
            return query.terms

        # quokka: 1 chunk, cable: 2, printer: 9.
        assert terms(100) == ["cabl", "printer", "quokka"]
        assert terms(3) == ["cabl", "quokka"]
        assert terms(0) == ["quokka"]


# --- durations: "24h" in a runbook and "24 hours" in an alert are the same words -----------------


def test_durations_are_read_as_the_number_and_the_units_word(superuser) -> None:  # type: ignore[no-untyped-def]
    def lexemes(text: str) -> set[str]:
        row = superuser.execute(
            "SELECT array(SELECT lexeme FROM unnest(to_tsvector('english', rf_lexical_text(%s))))",
            [text],
        ).fetchone()
        return set(row[0])

    assert lexemes("warning if less than 24h") == {"warn", "less", "24", "hour"}
    assert lexemes("24h") == lexemes("24 hours")
    assert {"5", "minut"} <= lexemes("rate(errors_total[5m])")
    assert {"1.5", "hour"} <= lexemes("within 1.5h")
    assert {"250", "millisecond"} <= lexemes("p99 above 250ms")
    assert "minut" not in lexemes("p99 above 250ms")  # milliseconds are not minutes
    assert {"30", "second", "2", "day", "week", "year"} <= lexemes("30s, 2d, 1w and 1y")
    # A unit letter inside a word is not a duration.
    assert lexemes("k8s sda1 eth0 v1s 3rd") == {"k8s", "sda1", "eth0", "v1s", "3rd"}


def test_a_question_in_hours_finds_the_runbook_written_in_h_and_back(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    docs = [
        doc(
            "short", "Disk filling", "Warning when the disk fills in less than 24h.", kind="runbook"
        ),
        doc("inodes", "Inodes filling", "The disk runs out of inodes within days.", kind="runbook"),
        doc("slow", "Slow queries", "Queries slower than 5 minutes are logged.", kind="runbook"),
    ]
    Indexer(db, HashingEmbedder()).upsert(tenant, docs)
    searcher = Searcher(db, HashingEmbedder(), WORDS_ONLY)
    hits = searcher.search(tenant, "disk predicted to fill within the next 24 hours", k=3)
    assert hits[0].external_id == "short"
    assert hits[0].scores.lexical > 1.5 * hits[1].scores.lexical
    hits = searcher.search(tenant, "queries over 5m", k=3)
    assert hits[0].external_id == "slow"
    assert hits[0].scores.lexical > 1.5 * hits[1].scores.lexical


def test_a_titles_duration_counts_as_its_words_in_the_title_cover(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    docs = [doc("wal", "Archive lagging over 4h", "Archive lag.", kind="runbook")]
    Indexer(db, HashingEmbedder()).upsert(tenant, docs)
    with db.tenant(tenant) as conn:
        document_id = conn.execute("SELECT id FROM documents").fetchone()["id"]  # type: ignore[index]
        cover = answers_store.title_cover(
            conn, tenant, "The archive is lagging for over 4 hours", [document_id]
        )
    # archiv, lag, 4, hour: every one in the question ("over" is a stop word).
    assert cover == {document_id: 1.0}


@pytest.fixture
def pre_0023(pg_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A database with only the migrations before 0023 applied (chunks read the old way), owned
    by a migrator that is no superuser, so row-level security binds it (FORCE) as it binds a
    managed service's: (the migrator's URL, a superuser's URL to inspect it)."""
    earlier = [m for m in migrations.available_migrations() if m.version < "0023"]
    with migrator_database(pg_server, "t_pre") as (owner_url, superuser_url):
        with (
            monkeypatch.context() as patch,
            psycopg.connect(owner_url, autocommit=True, row_factory=dict_row) as conn,
        ):
            patch.setattr(migrations, "available_migrations", lambda: earlier)
            migrations.upgrade(conn)
        yield owner_url, superuser_url


def _index_state(conn: psycopg.Connection[Any], tenant: uuid.UUID) -> tuple[Any, ...]:
    """Everything the full-text branch reads, by document and chunk position (not by id)."""
    postings = conn.execute(
        "SELECT d.external_id, c.ordinal, t.lexeme, t.impact FROM chunk_terms t"
        " JOIN chunks c ON c.id = t.chunk_id JOIN documents d ON d.id = c.document_id"
        " WHERE t.tenant_id = %s ORDER BY 1, 2, 3",
        [tenant],
    ).fetchall()
    vectors = conn.execute(
        "SELECT d.external_id, c.ordinal, c.tsv::text FROM chunks c"
        " JOIN documents d ON d.id = c.document_id WHERE c.tenant_id = %s ORDER BY 1, 2",
        [tenant],
    ).fetchall()
    counts = conn.execute(
        "SELECT lexeme, chunks FROM term_stats WHERE tenant_id = %s AND chunks > 0 ORDER BY 1",
        [tenant],
    ).fetchall()
    return postings, vectors, counts


def test_the_migration_reads_chunks_indexed_before_it_as_a_fresh_index_would(
    pre_0023: tuple[str, str],
) -> None:
    owner_url, superuser_url = pre_0023
    docs = [
        doc("short", "Disk filling in 4h", "Warning at less than 24h, critical under 4h."),
        doc("window", "Error rate", "rate(errors_total[5m]) over 0.05 for 15 minutes."),
        doc("plain", "Printer", "The printer jams on every page."),
    ]
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        # by hand: today's add_tenant writes columns a schema this old does not have yet
        row = conn.execute("INSERT INTO tenants (name) VALUES ('old') RETURNING id").fetchone()
        assert row is not None
        old = row[0]
    with Database(owner_url) as db:
        Indexer(db, HashingEmbedder()).upsert(old, docs)
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        before = _index_state(conn, old)
    assert "hour" not in str(before[2])  # the old reading: "24h" is one word

    migrate(owner_url)  # as the migrator, whom row-level security binds
    with Database(owner_url) as db:
        fresh = admin.add_tenant(db, "fresh").id
        Indexer(db, HashingEmbedder()).upsert(fresh, docs)
        hits = Searcher(db, HashingEmbedder(), WORDS_ONLY).search(old, "within 24 hours", k=3)
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        migrated, rebuilt = _index_state(conn, old), _index_state(conn, fresh)
    assert migrated == rebuilt
    assert migrated != before
    assert ("hour", 1) in migrated[2]  # the one chunk that holds hours, counted once
    assert hits[0].external_id == "short"
