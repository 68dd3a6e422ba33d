"""The full-text branch: BM25 scores read from the postings (idf × impact), kept by triggers."""

from __future__ import annotations

import math

from tests.integration.test_retrieval_index import doc

from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.retrieval.fusion import FusionParams
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.service import admin
from resolveflow.store import documents as store
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
