"""The index on a real Postgres: atomic re-indexing, tenant isolation, spaces, as-of, links."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.retrieval.errors import EmbeddingSpaceMismatch
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.rebuild import rebuild
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.store.database import Database

T0 = datetime(2024, 1, 1, tzinfo=UTC)
TOPICS = [
    "printer driver fails after kernel upgrade",
    "login page rejects valid passwords",
    "dark mode colours unreadable in settings",
    "export to csv drops the last column",
    "search box freezes on emoji input",
    "calendar shows wrong timezone for meetings",
    "upload of large files times out",
    "notifications arrive twice on android",
]


def doc(external_id: str, title: str, body: str = "", *, days: int = 0, **extra) -> SourceDocument:  # type: ignore[no-untyped-def]
    return SourceDocument(
        source="test",
        external_id=external_id,
        kind=extra.pop("kind", "issue"),
        title=title,
        body=body,
        created_at=T0 + timedelta(days=days),
        **extra,
    )


def corpus(prefix: str = "") -> list[SourceDocument]:
    return [
        doc(f"{prefix}{i}", topic, f"Steps: {topic}. It happens every time.", days=i)
        for i, topic in enumerate(TOPICS)
    ]


def test_reindexing_while_searching_never_shows_a_document_missing_or_twice(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    embedder = HashingEmbedder()
    indexer = Indexer(db, embedder)
    indexer.upsert(tenant, corpus())
    target = "zebra quasar flux capacitor overheats"
    indexer.upsert(tenant, [doc("hot", target, "first version")])
    searcher = Searcher(db, embedder)
    stop = threading.Event()
    problems: list[str] = []
    searches = [0]

    def search_loop() -> None:
        while not stop.is_set():
            hits = searcher.search(tenant, target, k=10)
            found = [h.external_id for h in hits].count("hot")
            if found != 1:
                problems.append(f"document appeared {found} times")
            searches[0] += 1

    readers = [threading.Thread(target=search_loop) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for version in range(40):
            # Between one and many chunks, so every re-index deletes and inserts a different set.
            body = "\n\n".join(
                f"Paragraph {version}-{i}. " + "detail " * 150 for i in range(version % 5)
            )
            indexer.upsert(tenant, [doc("hot", target, body)])
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert searches[0] > 20
    assert problems == []


@pytest.mark.parametrize("exact_max_chunks", [20_000, 0], ids=["exact", "hnsw"])
def test_tenant_b_exact_duplicate_never_appears_for_tenant_a(
    db: Database, exact_max_chunks: int
) -> None:
    a = admin.add_tenant(db, "tenant-a").id
    b = admin.add_tenant(db, "tenant-b").id
    embedder = HashingEmbedder()
    indexer = Indexer(db, embedder)
    query = "kernel panic when mounting encrypted volume over nfs"
    indexer.upsert(a, corpus("a"))
    # B holds the exact duplicate and many more rows, so A is a small share of the HNSW index.
    indexer.upsert(b, [doc("secret", query, query)] + corpus("b") * 1)
    indexer.upsert(b, [doc(f"b-extra-{i}", f"{query} variant {i}", query) for i in range(60)])
    searcher = Searcher(db, embedder, SearchParams(exact_max_chunks=exact_max_chunks))

    in_b = searcher.search(b, query, k=5)
    assert in_b[0].external_id == "secret"  # it would rank first anywhere it is visible

    in_a = searcher.search(a, query, k=10)
    assert len(in_a) == len(TOPICS)  # all of A's documents, filtered before ranking, not after
    assert all(h.source == "test" and h.external_id.startswith("a") for h in in_a)


def test_row_level_security_hides_other_tenants_chunks_even_without_a_filter(
    db: Database,
) -> None:
    a = admin.add_tenant(db, "tenant-a").id
    b = admin.add_tenant(db, "tenant-b").id
    indexer = Indexer(db, HashingEmbedder())
    indexer.upsert(b, corpus("b"))
    with db.tenant(a) as conn:
        rows = conn.execute("SELECT count(*) AS n FROM chunks").fetchone()
        docs = conn.execute("SELECT count(*) AS n FROM documents").fetchone()
    assert rows is not None and docs is not None
    assert (rows["n"], docs["n"]) == (0, 0)


def test_a_changed_embedder_gets_a_clear_error_until_the_index_is_rebuilt(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    old, new = HashingEmbedder(256), HashingEmbedder(64)
    Indexer(db, old).upsert(tenant, corpus())
    with pytest.raises(EmbeddingSpaceMismatch, match="index rebuild") as raised:
        Searcher(db, new).search(tenant, "printer driver")
    assert "fake/hashing-v1/256" in raised.value.message
    assert "fake/hashing-v1/64" in raised.value.message
    with pytest.raises(EmbeddingSpaceMismatch):
        Indexer(db, new).upsert(tenant, [doc("x", "another printer issue")])

    stats = rebuild(db, new, tenant)
    assert stats.chunks == len(TOPICS)
    hits = Searcher(db, new).search(tenant, "printer driver kernel", k=3)
    assert hits[0].title == TOPICS[0]
    with pytest.raises(EmbeddingSpaceMismatch):
        Searcher(db, old).search(tenant, "printer driver")


def test_as_of_excludes_documents_created_at_or_after_it(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    embedder = HashingEmbedder()
    Indexer(db, embedder).upsert(
        tenant,
        [
            doc("old", "cache corruption after restart", days=0),
            doc("same-time", "cache corruption after restart again", days=5),
            doc("new", "cache corruption after restart fixed?", days=9),
        ],
    )
    searcher = Searcher(db, embedder)
    everything = {h.external_id for h in searcher.search(tenant, "cache corruption restart")}
    assert everything == {"old", "same-time", "new"}
    before = searcher.search(tenant, "cache corruption restart", as_of=T0 + timedelta(days=5))
    assert [h.external_id for h in before] == ["old"]


def test_upsert_replaces_a_document_in_place_and_skips_unchanged_ones(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    embedder = HashingEmbedder()
    indexer = Indexer(db, embedder)
    first = indexer.upsert(tenant, corpus())
    assert (first.written, first.unchanged, first.chunks) == (len(TOPICS), 0, len(TOPICS))
    again = indexer.upsert(tenant, corpus())
    assert (again.written, again.unchanged, again.chunks) == (0, len(TOPICS), 0)

    searcher = Searcher(db, embedder)
    before = searcher.search(tenant, TOPICS[0], k=1)[0]
    long_body = "\n\n".join("More detail about the printer. " * 30 for _ in range(4))
    changed = indexer.upsert(tenant, [doc("0", TOPICS[0], long_body)])
    assert changed.written == 1 and changed.chunks > 1
    after = searcher.search(tenant, TOPICS[0], k=1)[0]
    assert after.document_id == before.document_id  # same document, new chunks
    with db.tenant(tenant) as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM documents) AS docs, (SELECT count(*) FROM chunks) AS chunks,"
            " (SELECT chunk_count FROM retrieval_indexes) AS counted"
        ).fetchone()
    assert counts is not None
    assert counts["docs"] == len(TOPICS)
    assert counts["chunks"] == counts["counted"] == len(TOPICS) - 1 + changed.chunks


def test_a_pull_request_that_says_fixes_resolves_the_issue(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    embedder = HashingEmbedder()
    indexer = Indexer(db, embedder)
    # The pull request first: the link names the issue, which may be indexed later.
    indexer.upsert(
        tenant,
        [doc("12", "Handle emoji in search", "Fixes #3", kind="pull", url="https://x/pull/12")],
    )
    indexer.upsert(tenant, [doc("3", "search box freezes on emoji input", "It hangs.")])
    hits = Searcher(db, embedder).search(tenant, "search box freezes on emoji", k=2)
    issue = next(h for h in hits if h.external_id == "3")
    assert issue.resolved_by == ("https://x/pull/12",)
    assert 0.0 <= issue.relevance <= 1.0
    assert issue.scores.vector_rank == 1 and issue.scores.lexical > 0


def test_hnsw_and_exact_search_agree_on_a_small_index(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    embedder = HashingEmbedder()
    Indexer(db, embedder).upsert(tenant, corpus())
    exact = Searcher(db, embedder, SearchParams(exact_max_chunks=10**6))
    hnsw = Searcher(db, embedder, SearchParams(exact_max_chunks=0))
    for topic in TOPICS:
        assert [h.external_id for h in exact.search(tenant, topic, k=3)] == [
            h.external_id for h in hnsw.search(tenant, topic, k=3)
        ]
    assert hnsw.last_timing is not None and hnsw.last_timing.ef_search is not None


def test_the_database_refuses_a_chunk_in_another_space(
    db: Database, superuser: psycopg.Connection
) -> None:  # type: ignore[type-arg]
    tenant = admin.add_tenant(db, "acme").id
    Indexer(db, HashingEmbedder()).upsert(tenant, corpus()[:1])
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        superuser.execute(
            "UPDATE chunks SET space_id = (SELECT min(id) FROM embedding_spaces) + 1000"
        )


def test_search_on_an_empty_index_returns_nothing(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    started = time.perf_counter()
    assert Searcher(db, HashingEmbedder()).search(tenant, "anything") == []
    assert time.perf_counter() - started < 5


def test_the_full_text_query_keeps_the_rare_terms_and_drops_the_very_common(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    embedder = HashingEmbedder()
    docs = [doc(f"c{i}", f"common report number{i}", "common words only") for i in range(120)]
    docs.append(doc("rare", "common report with a zyzzyva", "common words and zyzzyva"))
    Indexer(db, embedder).upsert(tenant, docs)
    with db.tenant(tenant) as conn:
        stats = conn.execute(
            "SELECT lexeme, chunks FROM term_stats WHERE lexeme IN ('common', 'zyzzyva')"
        ).fetchall()
    assert {row["lexeme"]: row["chunks"] for row in stats} == {"common": 121, "zyzzyva": 1}

    hits = Searcher(db, embedder).search(tenant, "common zyzzyva", k=10)
    lexical = [h.external_id for h in hits if h.scores.lexical_rank is not None]
    assert lexical == ["rare"]  # "common" (in all 121 chunks) was left out of the OR query
    only_common = Searcher(db, embedder).search(tenant, "common", k=5)
    assert all(h.scores.lexical > 0 for h in only_common)  # nothing rarer: it is kept

    Indexer(db, embedder).upsert(tenant, [doc("rare", "gone", "replaced text")])
    with db.tenant(tenant) as conn:
        row = conn.execute("SELECT chunks FROM term_stats WHERE lexeme = 'zyzzyva'").fetchone()
    assert row == {"chunks": 0}  # counts follow deletions too


def test_a_small_tenant_in_a_large_table_gets_its_own_rows_by_hnsw(
    db: Database, superuser: psycopg.Connection
) -> None:  # type: ignore[type-arg]
    """pgvector 0.8+ (the Debian server in CI): the iterative scan finds the tenant's rows
    without an exact fallback. Before 0.8 (pgserver's 0.6): a raised ef_search or the fallback.
    Either way the answer is the exact one."""
    embedder = HashingEmbedder()
    big, small = admin.add_tenant(db, "big").id, admin.add_tenant(db, "small").id
    crowd = [doc(f"b{i}", f"{TOPICS[i % 8]} variant {i}", f"noise {i} " * 5) for i in range(400)]
    Indexer(db, embedder).upsert(big, crowd)
    Indexer(db, embedder).upsert(small, corpus())
    superuser.execute("ANALYZE chunks")  # the share of the table each tenant holds
    exact = Searcher(db, embedder, SearchParams(exact_max_chunks=10**6))
    hnsw = Searcher(db, embedder, SearchParams(exact_max_chunks=0, ef_search_min=10))
    version = superuser.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
    ).fetchone()
    assert version is not None
    iterative = tuple(int(p) for p in version[0].split(".")) >= (0, 8)
    for topic in TOPICS:
        assert [h.external_id for h in hnsw.search(small, topic, k=3)] == [
            h.external_id for h in exact.search(small, topic, k=3)
        ]
        timing = hnsw.last_timing
        assert timing is not None
        if iterative:
            assert timing.iterative and not timing.exact
        else:
            assert not timing.iterative
