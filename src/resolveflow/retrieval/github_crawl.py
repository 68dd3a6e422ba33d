"""Crawling a GitHub repository's issues, pull requests and comments into the index, resumably.

Pages are requested least recently updated first with ``since`` = the newest ``updated_at`` already
stored, always page 1 (a page number would shift when an item is updated mid-crawl; an update
moves the item to the end, where the crawl will meet it again). After a page's documents are
committed the cursor (tenant, source) is saved, so a killed crawl resumes at its last page; items
seen again are skipped by their ``updated_at`` (or, if changed, replaced by the one upsert), so
nothing is stored twice. Rate limits are waited out, bounded; a wait longer than allowed stops
the crawl with a message saying when to run it again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import TypeVar
from uuid import UUID

from resolveflow.adapters.github.app_client import acting_for
from resolveflow.adapters.github.protocol import GitHub, IssueData, RepoName
from resolveflow.errors import ProviderRateLimited
from resolveflow.retrieval.chunking import CommentText
from resolveflow.retrieval.ingest import Indexer, IngestStats
from resolveflow.retrieval.records import SourceDocument
from resolveflow.store import documents as store

logger = logging.getLogger(__name__)

T = TypeVar("T")
PER_PAGE = 100


@dataclass
class CrawlStats:
    pages: int = 0
    items: int = 0
    skipped_unchanged: int = 0
    rate_limit_waits: int = 0
    resumed_from: datetime | None = None
    ingest: IngestStats | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "pages": self.pages,
            "items": self.items,
            "skipped_unchanged": self.skipped_unchanged,
            "rate_limit_waits": self.rate_limit_waits,
            "resumed_from": self.resumed_from.isoformat() if self.resumed_from else None,
            **(self.ingest.as_json() if self.ingest else {}),
        }


class CrawlRateLimited(ProviderRateLimited):
    """GitHub asked for a longer wait than allowed; run the same command again later to resume."""


def source_name(repo: RepoName) -> str:
    return f"github:{repo.full_name.lower()}"


def issue_document(repo: RepoName, item: IssueData, comments: list[CommentText]) -> SourceDocument:
    state = item.state
    if item.is_pull_request and item.merged_at is not None:
        state = "merged"
    return SourceDocument(
        source=source_name(repo),
        external_id=str(item.number),
        kind="pull" if item.is_pull_request else "issue",
        title=item.title,
        body=item.body,
        url=item.url,
        state=state,
        labels=item.labels,
        created_at=item.created_at,
        closed_at=item.closed_at,
        updated_at=item.updated_at,
        comments=tuple(comments),
        repository=repo.full_name,
    )


class GitHubCrawler:
    def __init__(
        self,
        indexer: Indexer,
        github: GitHub,
        *,
        max_waits: int = 10,
        max_wait_seconds: float = 3600.0,
        per_page: int = PER_PAGE,
        batch_size: int = 20,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.indexer = indexer
        self.db = indexer.db
        self.github = github
        self.max_waits = max_waits
        self.max_wait_seconds = max_wait_seconds
        self.per_page = per_page
        self.batch_size = batch_size
        self._sleep = sleep

    def crawl(
        self,
        tenant_id: UUID,
        repo: RepoName,
        *,
        state: str = "all",
        since: datetime | None = None,
        on_page: Callable[[CrawlStats], None] | None = None,
    ) -> CrawlStats:
        source = source_name(repo)
        cursor_key = source if state == "all" else f"{source}?state={state}"
        stats = CrawlStats(ingest=IngestStats())
        with self.db.tenant(tenant_id) as conn:
            cursor = store.get_cursor(conn, tenant_id, cursor_key)
        if cursor is None or (
            since is not None and cursor.since is not None and since > cursor.since
        ):
            cursor = store.CrawlCursor(cursor_key, since, 1, 0, None)
        else:
            stats.resumed_from = cursor.since
        cursor = replace(cursor, finished_at=None)
        self.indexer.prepare(tenant_id)
        while True:
            page = self._patiently(
                stats,
                partial(
                    acting_for(self.github, tenant_id).list_issues_page,
                    repo,
                    state=state,
                    since=cursor.since,
                    page=cursor.page,
                    per_page=self.per_page,
                ),
            )
            stats.pages += 1
            stats.items += len(page.items)
            self._index_page(tenant_id, repo, page.items, stats)
            newest = max((item.updated_at for item in page.items), default=None)
            if newest is not None and (cursor.since is None or newest > cursor.since):
                cursor = replace(cursor, since=newest, page=1)
            elif page.has_next:
                # A whole page updated in the same second as the cursor: step over it.
                cursor = replace(cursor, page=cursor.page + 1)
            cursor = replace(cursor, items_seen=cursor.items_seen + len(page.items))
            if not page.has_next:
                cursor = replace(cursor, page=1, finished_at=datetime.now(UTC))
            with self.db.tenant(tenant_id) as conn:
                store.save_cursor(conn, tenant_id, cursor)
            if on_page is not None:
                on_page(stats)
            if not page.has_next:
                return stats

    def _index_page(
        self, tenant_id: UUID, repo: RepoName, items: list[IssueData], stats: CrawlStats
    ) -> None:
        if not items:
            return
        source = source_name(repo)
        with self.db.tenant(tenant_id) as conn:
            known = store.document_versions(
                conn, tenant_id, source, [str(item.number) for item in items]
            )
        documents: list[SourceDocument] = []
        for item in items:
            if str(item.number) in known and known[str(item.number)] == item.updated_at:
                stats.skipped_unchanged += 1
                continue
            comments = self._patiently(
                stats,
                partial(acting_for(self.github, tenant_id).list_issue_comments, repo, item.number),
            )
            documents.append(
                issue_document(repo, item, [CommentText(c.author, c.body) for c in comments])
            )
            if len(documents) >= self.batch_size:
                # Committed as we go: after a kill, these are skipped by their updated_at.
                self._store(tenant_id, documents, stats)
                documents = []
        self._store(tenant_id, documents, stats)

    def _store(self, tenant_id: UUID, documents: list[SourceDocument], stats: CrawlStats) -> None:
        if documents:
            done = self.indexer.upsert(tenant_id, documents)
            assert stats.ingest is not None
            stats.ingest.add(done)

    def _patiently(self, stats: CrawlStats, call: Callable[[], T]) -> T:
        """Run a read, waiting out rate limits (Retry-After or the reset time), bounded."""
        waits = 0
        while True:
            try:
                return call()
            except ProviderRateLimited as exc:
                wait = exc.retry_after_seconds
                if waits >= self.max_waits or wait > self.max_wait_seconds:
                    raise CrawlRateLimited(
                        f"GitHub rate limit: asked to wait {wait:.0f}s after {waits} waits; "
                        "run the same command again later, the crawl resumes where it stopped",
                        retry_after_seconds=wait,
                    ) from exc
                waits += 1
                stats.rate_limit_waits += 1
                logger.warning("rate limited, waiting", extra={"seconds": round(wait, 1)})
                self._sleep(wait)
