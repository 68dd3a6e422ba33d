"""`index github` against the fake GitHub over HTTP: pages, comments, links, rate limits,
resumption after a refusal to wait and after SIGKILL, never a duplicate."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.retrieval.github_crawl import CrawlRateLimited, GitHubCrawler, source_name
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher
from resolveflow.sandbox.forge.faults import Delay, PrimaryRateLimit, SecondaryRateLimit
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.database import Database

REPO = RepoName("octo", "crawl")
T0 = datetime(2023, 5, 1, tzinfo=UTC)
N_ISSUES = 45  # with per_page=10: five pages


def seed(fake: FakeGitHubServer, n: int = N_ISSUES) -> None:
    fake.add_repo(REPO.full_name, ["bug", "docs"])
    for number in range(1, n + 1):
        moment = (T0 + timedelta(hours=number)).isoformat()
        fake.add_issue(
            REPO.full_name,
            number,
            f"Issue {number}: widget {number} misbehaves",
            f"Details of problem {number}.",
            labels=["bug"] if number % 2 else ["docs"],
            created_at=moment,
            updated_at=moment,
            state="closed" if number % 3 == 0 else "open",
        )
        if number % 5 == 0:
            fake.add_comment_directly(
                REPO.full_name, number, f"Comment on {number}: seen on linux too", "carol"
            )
    moment = (T0 + timedelta(hours=n + 1)).isoformat()
    fake.add_issue(
        REPO.full_name,
        n + 1,
        "Stop widget 7 from misbehaving",
        "This fixes #7.",
        is_pull_request=True,
        state="closed",
        created_at=moment,
        updated_at=moment,
        merged_at=moment,
    )


def stored(db: Database, tenant_id) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with db.tenant(tenant_id) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM documents) AS documents,"
            " (SELECT count(DISTINCT external_id) FROM documents) AS distinct_ids,"
            " (SELECT count(*) FROM chunks) AS chunks,"
            " (SELECT count(*) FROM document_links) AS links"
        ).fetchone()
    assert row is not None
    return dict(row)


@pytest.fixture
def crawl_github() -> FakeGitHubServer:
    server = FakeGitHubServer(default_login="bot")
    server.register_token("crawl-token", "bot")
    with server:
        seed(server)
        yield server  # type: ignore[misc]


def crawler(db: Database, fake: FakeGitHubServer, sleeps: list[float], **kw) -> GitHubCrawler:  # type: ignore[no-untyped-def]
    client = GitHubKitClient(fake.url, "crawl-token", timeout_seconds=5.0)
    return GitHubCrawler(
        Indexer(db, HashingEmbedder()), client, per_page=10, sleep=sleeps.append, **kw
    )


def test_crawl_indexes_issues_pulls_comments_and_fix_links(
    db: Database, crawl_github: FakeGitHubServer
) -> None:
    tenant = admin.add_tenant(db, "acme").id
    stats = crawler(db, crawl_github, []).crawl(tenant, REPO)
    assert stats.items >= N_ISSUES + 1
    assert stored(db, tenant) == {
        "documents": N_ISSUES + 1,
        "distinct_ids": N_ISSUES + 1,
        "chunks": N_ISSUES + 1 + N_ISSUES // 5,  # a head each, one chunk per comment
        "links": 1,
    }
    hits = Searcher(db, HashingEmbedder()).search(tenant, "widget 7 misbehaves", k=3)
    seven = next(h for h in hits if h.external_id == "7")
    assert seven.resolved_by == (f"{crawl_github.url.rstrip('/')}/octo/crawl/pull/46",) or (
        seven.resolved_by and seven.resolved_by[0].endswith("/pull/46")
    )
    assert seven.labels == ("bug",) and seven.source == source_name(REPO)
    with db.tenant(tenant) as conn:
        pull = conn.execute("SELECT kind, state FROM documents WHERE external_id = '46'").fetchone()
    assert pull == {"kind": "pull", "state": "merged"}

    again = crawler(db, crawl_github, []).crawl(tenant, REPO)
    assert again.resumed_from is not None
    assert again.ingest is not None and again.ingest.written == 0
    assert stored(db, tenant)["documents"] == N_ISSUES + 1


def test_rate_limits_are_waited_out_and_every_item_is_stored_once(
    db: Database, crawl_github: FakeGitHubServer
) -> None:
    tenant = admin.add_tenant(db, "acme").id
    crawl_github.inject(SecondaryRateLimit(retry_after=7), method="GET", path=r"/issues\?", times=2)
    crawl_github.inject(PrimaryRateLimit(reset_in=30), method="GET", path=r"/issues/10/comments")
    sleeps: list[float] = []
    stats = crawler(db, crawl_github, sleeps).crawl(tenant, REPO)
    assert stats.rate_limit_waits == 3
    assert sleeps[:2] == [7.0, 7.0] and 25 <= sleeps[2] <= 31
    assert stored(db, tenant)["distinct_ids"] == stored(db, tenant)["documents"] == N_ISSUES + 1


def test_a_rate_limit_too_long_to_wait_stops_the_crawl_and_the_rerun_resumes(
    db: Database, crawl_github: FakeGitHubServer
) -> None:
    tenant = admin.add_tenant(db, "acme").id
    # Third page: GitHub asks for an hour; we allow a minute.
    crawl_github.inject(PrimaryRateLimit(reset_in=3600), method="GET", path=r"/issues\?")
    first_pages = [0]

    def count_page(stats) -> None:  # type: ignore[no-untyped-def]
        first_pages[0] = stats.pages

    crawl_github.inject(SecondaryRateLimit(retry_after=1), method="GET", path=r"/issues/1/comments")
    with pytest.raises(CrawlRateLimited, match="run the same command again"):
        crawler(db, crawl_github, [], max_wait_seconds=60).crawl(tenant, REPO, on_page=count_page)
    assert stored(db, tenant)["documents"] == 0  # the very first page was refused

    # Now a limit in the middle: two pages in, then refusal.
    sleeps: list[float] = []
    partial = crawler(db, crawl_github, sleeps, max_wait_seconds=60)
    crawl_github.inject(PrimaryRateLimit(reset_in=3600), method="GET", path=r"/issues/25/comments")
    with pytest.raises(CrawlRateLimited):
        partial.crawl(tenant, REPO)
    midway = stored(db, tenant)
    assert 0 < midway["documents"] < N_ISSUES + 1
    assert midway["documents"] == midway["distinct_ids"]

    resumed = crawler(db, crawl_github, []).crawl(tenant, REPO)
    assert resumed.resumed_from is not None
    final = stored(db, tenant)
    assert final["documents"] == final["distinct_ids"] == N_ISSUES + 1
    assert final["chunks"] == N_ISSUES + 1 + N_ISSUES // 5


def test_a_crawl_killed_midway_resumes_without_duplicates(
    database_url: str, db: Database, crawl_github: FakeGitHubServer, tmp_path: Path
) -> None:
    admin.add_tenant(db, "acme")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(
        RESOLVEFLOW_DATABASE_URL=database_url,
        RESOLVEFLOW_GITHUB_API_URL=crawl_github.url,
        RESOLVEFLOW_GITHUB_TOKEN="crawl-token",
        RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS="60",
        RESOLVEFLOW_LEASE_SECONDS="300",
        RESOLVEFLOW_EMBEDDER="fake",
        RESOLVEFLOW_HOME=str(tmp_path / "home"),
    )
    # One page of 100 holds everything; items are committed 20 at a time, and the comments of
    # issue 30 hang, so the process is killed mid-page with issues 1-20 committed.
    crawl_github.inject(Delay(seconds=30), method="GET", path=r"/issues/30/comments")
    command = [sys.executable, "-m", "resolveflow", "index", "github", REPO.full_name, "--json"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tenant = admin.find_tenant(db, "acme").id
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if crawl_github.pending_faults == 0:  # the hanging request has arrived
                break
            assert process.poll() is None, process.communicate()
            time.sleep(0.1)
        assert crawl_github.pending_faults == 0
        # Issues 1-20 may still be committing beside the hanging request: poll, bounded.
        while time.monotonic() < deadline and stored(db, tenant)["documents"] < 20:
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    interrupted = stored(db, tenant)
    assert interrupted["documents"] == 20

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    final = stored(db, tenant)
    assert final["documents"] == final["distinct_ids"] == N_ISSUES + 1
    assert final["chunks"] == N_ISSUES + 1 + N_ISSUES // 5
    assert final["links"] == 1
