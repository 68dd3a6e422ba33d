"""Which chunks get a vector, and how chunks without one are still found and placed."""

from __future__ import annotations

import numpy as np
import psycopg
from tests.core.integration.test_retrieval_index import corpus, doc

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.retrieval.chunking import chunk_document, embedding_text, query_text
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.rebuild import rebuild
from resolveflow.retrieval.search import Searcher
from resolveflow.store.database import Database

# Three body sections of about 1,000 characters each: several chunks after the head.
SECTIONS = [
    " ".join([f"paragraph {n} says the {word} service restarts slowly"] * 20)
    for n, word in enumerate(["alpha", "beta", "gamma"])
]
LONG_BODY = "\n\n".join(SECTIONS) + "\n\nThe last section names a xylophonequark crash."


def _vectors_per_kind(superuser: psycopg.Connection, tenant: object) -> dict[str, tuple[int, int]]:  # type: ignore[type-arg]
    rows = superuser.execute(
        "SELECT d.kind, count(c.embedding), count(*) FROM chunks c "
        "JOIN documents d ON d.id = c.document_id WHERE c.tenant_id = %s GROUP BY d.kind",
        [tenant],
    ).fetchall()
    return {str(kind): (int(with_vector), int(total)) for kind, with_vector, total in rows}


def test_a_report_gets_one_vector_and_a_runbook_one_per_chunk(db: Database, superuser) -> None:  # type: ignore[no-untyped-def]
    tenant = admin.add_tenant(db, "acme").id
    Indexer(db, HashingEmbedder()).upsert(
        tenant,
        [
            doc("issue-1", "Service restarts slowly", LONG_BODY),
            doc("runbook-1", "Restart runbook", LONG_BODY, kind="runbook", runbook_tag="restart"),
        ],
    )
    chunks = len(chunk_document("Service restarts slowly", LONG_BODY))
    assert chunks >= 3
    counts = _vectors_per_kind(superuser, tenant)
    assert counts["issue"] == (1, chunks)
    assert counts["runbook"][0] == counts["runbook"][1] >= 3


def test_a_word_only_in_a_later_chunk_finds_the_report_placed_by_its_head_vector(
    db: Database,
) -> None:
    tenant = admin.add_tenant(db, "acme").id
    embedder = HashingEmbedder()
    Indexer(db, embedder).upsert(tenant, [*corpus(), doc("long", "Service restarts", LONG_BODY)])
    query = "xylophonequark"
    hits = Searcher(db, embedder).search(tenant, query, k=3)
    assert hits[0].external_id == "long"
    assert hits[0].section == "body"
    assert "xylophonequark" in hits[0].snippet
    head = chunk_document("Service restarts", LONG_BODY)[0]
    head_vector = embedder.embed_documents([embedding_text("Service restarts", "head", head.text)])
    expected = float(np.dot(embedder.embed_query(query_text(query)), head_vector[0]))
    assert abs(hits[0].scores.cosine - expected) < 1e-5


def test_rebuild_moves_chunks_without_a_vector_to_the_new_space(db: Database, superuser) -> None:  # type: ignore[no-untyped-def]
    tenant = admin.add_tenant(db, "acme").id
    Indexer(db, HashingEmbedder(384)).upsert(tenant, [doc("long", "Service restarts", LONG_BODY)])
    bigger = HashingEmbedder(256)
    stats = rebuild(db, bigger, tenant)
    assert stats.chunks == 1  # only the head had a vector to redo
    spaces = superuser.execute(
        "SELECT DISTINCT c.space_id, c.dims FROM chunks c WHERE c.tenant_id = %s", [tenant]
    ).fetchall()
    assert spaces == [(spaces[0][0], 256)]
    hits = Searcher(db, bigger).search(tenant, "xylophonequark", k=1)
    assert [hit.external_id for hit in hits] == ["long"]
