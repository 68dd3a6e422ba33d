"""Commands for indexing, search and retrieval evaluation (registered on the main app)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from resolveflow.accounts import admin
from resolveflow.accounts.admin import normalize_repository
from resolveflow.adapters.github.protocol import RepoName
from resolveflow.bootstrap.app import App, extraction_limits, search_params
from resolveflow.bootstrap.embedder import build_embedder
from resolveflow.cli import common
from resolveflow.cli.output import console, emit, err_console, fields, table, whole
from resolveflow.errors import InvalidInput, NotFound
from resolveflow.evals.duplicates import evaluate_duplicates
from resolveflow.retrieval.document_bounds import stored_text
from resolveflow.retrieval.github_crawl import CrawlStats, GitHubCrawler, source_name
from resolveflow.retrieval.ingest import Indexer, IngestStats
from resolveflow.retrieval.rebuild import rebuild
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher
from resolveflow.retrieval.sources import DocsFolder, parse_time, read_corpus
from resolveflow.store import documents as store
from resolveflow.triage.label_evaluation import evaluate_labels

index_app = typer.Typer(
    help="Put issues, pull requests and docs into the search index.", no_args_is_help=True
)
eval_app = typer.Typer(
    help="Measure retrieval and label suggestion on a corpus.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    """Add the retrieval commands to ``app``."""
    app.add_typer(index_app, name="index")
    app.add_typer(eval_app, name="eval")
    app.command("search")(search)


def _tenant_id(opened: App, name: str | None) -> UUID:
    return admin.find_tenant(opened.db, common.tenant_name(opened, name)).id


def _date(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    moment = parse_time(value, where=option)
    if moment is None:
        raise InvalidInput(f"{option} needs a date such as 2023-01-01")
    return moment


@contextmanager
def _progress(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr, shown only on a terminal (stdout stays one JSON document)."""
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    )
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


def _ingest_output(stats: IngestStats, as_json: bool, extra: dict[str, object]) -> None:
    data = {**extra, **stats.as_json()}
    emit(data, as_json, lambda: fields([(k.replace("_", " "), v) for k, v in data.items()]))


@index_app.command("file")
def index_file(
    path: Path = typer.Argument(..., help="A JSONL corpus (see docs/retrieval.md)."),
    source: str = typer.Option(..., "--source", help="Name of the source, e.g. the repository."),
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Index a JSONL corpus file."""
    stats = _index_documents(tenant, f"indexing {path.name}", read_corpus(path, source))
    _ingest_output(stats, as_json, {"source": source})


@index_app.command("docs")
def index_docs(
    directory: Path = typer.Argument(..., help="A folder of docs: Markdown, text, HTML, PDF."),
    source: str = typer.Option("docs", "--source", help="Name of the source."),
    prune: bool = typer.Option(
        False, "--prune", help="Remove this source's documents whose files are gone."
    ),
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Index .md, .txt, .html and .pdf files; front matter `runbook: TAG` marks a runbook."""
    removed: list[str] = []
    stored_text(source, "--source")
    with common.app() as opened:
        # Symbolic links, devices and pipes are skipped; text comes from worker processes.
        folder = DocsFolder(directory, source, limits=extraction_limits(opened.settings))
        tenant_id = _tenant_id(opened, tenant)
        indexer = Indexer(opened.db, build_embedder(opened.settings))
        with _progress(f"indexing {directory}", None) as advance:
            stats = indexer.upsert(tenant_id, folder, lambda s: advance(s.documents))
        if prune:
            removed = indexer.prune(tenant_id, source, folder.seen)
    for _name, reason in folder.skipped:  # one line each (the reason names the file)
        err_console.print(f"skipped {reason}", markup=False, highlight=False, soft_wrap=True)
    data: dict[str, object] = {"source": source, **stats.as_json()}
    data["skipped"] = len(folder.skipped)
    if prune:
        data["removed"] = len(removed)
    shown = list(data.items())
    data["skipped_files"] = [{"path": name, "reason": reason} for name, reason in folder.skipped]
    if prune:
        data["removed_files"] = removed
    emit(data, as_json, lambda: fields([(k.replace("_", " "), v) for k, v in shown]))


@index_app.command("remove")
def index_remove(
    path: str = typer.Argument(
        ..., help="The document's path as indexed (relative to its folder)."
    ),
    source: str = typer.Option("docs", "--source", help="Name of the source."),
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Remove a document from the index; searches stop finding it at once."""
    stored_text(path, "the path")  # an argument that is not UTF-8 arrives as lone surrogates
    stored_text(source, "--source")
    with common.app() as opened:
        tenant_id = _tenant_id(opened, tenant)
        indexer = Indexer(opened.db, build_embedder(opened.settings))
        removed = indexer.remove(tenant_id, source, [path])
    if not removed:
        raise NotFound(f"no document {path!r} in source {source!r}")
    data = {"source": source, "removed": removed}
    emit(data, as_json, lambda: fields([("removed", path), ("source", source)]))


def _index_documents(
    tenant: str | None, description: str, documents: Iterable[SourceDocument]
) -> IngestStats:
    """The one path from a document source into the index, with a progress bar."""
    with common.app() as opened:
        tenant_id = _tenant_id(opened, tenant)
        indexer = Indexer(opened.db, build_embedder(opened.settings))
        with _progress(description, None) as advance:
            return indexer.upsert(tenant_id, documents, lambda s: advance(s.documents))


@index_app.command("github")
def index_github(
    repository: str = typer.Argument(..., help="OWNER/REPO"),
    state: str = typer.Option("all", "--state", help="all or closed"),
    since: str | None = typer.Option(None, "--since", help="Only items updated since DATE."),
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Index a repository's issues, pull requests and comments (resumable)."""
    if state not in ("all", "closed"):
        raise InvalidInput("--state must be all or closed")
    repo = RepoName.parse(normalize_repository(repository))
    with common.app() as opened:
        tenant_id = _tenant_id(opened, tenant)
        indexer = Indexer(opened.db, build_embedder(opened.settings))
        crawler = GitHubCrawler(
            indexer,
            opened.github,
            max_waits=opened.settings.retrieval.index_rate_limit_max_waits,
            max_wait_seconds=opened.settings.executor.rate_limit_max_wait_seconds,
        )
        with _progress(f"crawling {repo.full_name}", None) as advance:
            seen = [0]

            def on_page(stats: CrawlStats) -> None:
                advance(stats.items - seen[0])
                seen[0] = stats.items

            stats = crawler.crawl(
                tenant_id, repo, state=state, since=_date(since, "--since"), on_page=on_page
            )
    data = {"source": source_name(repo), **stats.as_json()}
    emit(data, as_json, lambda: fields([(k.replace("_", " "), v) for k, v in data.items()]))


@index_app.command("rebuild")
def index_rebuild(
    tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption
) -> None:
    """Re-embed the tenant's whole index with the configured embedder."""
    with common.app() as opened:
        tenant_id = _tenant_id(opened, tenant)
        with _progress("re-embedding", None) as advance:
            stats = rebuild(opened.db, build_embedder(opened.settings), tenant_id, advance)
    data = stats.as_json()
    emit(data, as_json, lambda: fields([(k.replace("_", " "), v) for k, v in data.items()]))


@index_app.command("status")
def index_status(
    tenant: str | None = common.TenantOption, as_json: bool = common.JsonOption
) -> None:
    """What the tenant's index holds and which embedding space it is in."""
    with common.app() as opened:
        tenant_id = _tenant_id(opened, tenant)
        with opened.db.tenant(tenant_id) as conn:
            state = store.index_state(conn, tenant_id)
            summary = store.index_summary(conn, tenant_id)
        configured = str(build_embedder(opened.settings).space)
    indexed = (
        f"{state.space.provider}/{state.space.model}/{state.space.dimensions}" if state else None
    )
    data = {**asdict(summary), "space": indexed, "configured_space": configured}
    emit(data, as_json, lambda: fields([(k.replace("_", " "), v) for k, v in data.items()]))


def search(
    text: str = typer.Argument(..., help="What to look for."),
    k: int = typer.Option(10, "--k", help="How many documents to return."),
    as_of: str | None = typer.Option(
        None, "--as-of", help="Only documents created before this time."
    ),
    tenant: str | None = common.TenantOption,
    as_json: bool = common.JsonOption,
) -> None:
    """Hybrid search (meaning and words) over the tenant's index."""
    with common.app() as opened:
        tenant_id = _tenant_id(opened, tenant)
        searcher = Searcher(
            opened.db, build_embedder(opened.settings), search_params(opened.settings)
        )
        hits = searcher.search(tenant_id, text, k=k, as_of=_date(as_of, "--as-of"))
    emit(
        [hit.as_json() for hit in hits],
        as_json,
        lambda: table(
            "results",
            ["#", "relevance", "kind", whole("id"), "title", "snippet"],
            [
                (
                    i,
                    f"{hit.relevance:.2f}",
                    hit.kind,
                    hit.external_id,
                    hit.title[:60],
                    hit.snippet[:80],
                )
                for i, hit in enumerate(hits, start=1)
            ],
        ),
    )


@eval_app.command("duplicates")
def eval_duplicates(
    corpus: Path = typer.Option(..., "--corpus", help="JSONL corpus."),
    pairs: Path = typer.Option(..., "--pairs", help="TSV of duplicate pairs (id_a, id_b)."),
    as_json: bool = common.JsonOption,
) -> None:
    """Duplicate retrieval on a scratch tenant: n, MRR@5, R@1, R@5, R@10."""
    with common.app() as opened:
        result = evaluate_duplicates(
            opened.db,
            build_embedder(opened.settings),
            corpus,
            pairs,
            search_params(opened.settings),
        )
    figures = result.report.as_json()
    data = {**figures, "misses": [m.as_json() for m in result.misses]}

    def render() -> None:
        fields([(k.replace("_", " "), v) for k, v in figures.items()])
        if result.misses:
            table(
                "misses (the duplicate did not come first)",
                ["query", "duplicate", "rank", "first"],
                [(m.query, m.duplicate, m.rank, m.first) for m in result.misses],
            )

    emit(data, as_json, render)


@eval_app.command("labels")
def eval_labels(
    corpus: Path = typer.Option(..., "--corpus", help="JSONL corpus with labels."),
    since: str = typer.Option(..., "--since", help="Learn before DATE, propose from DATE on."),
    as_json: bool = common.JsonOption,
) -> None:
    """Label suggestion backtest: precision, recall, F1 and abstentions."""
    moment = _date(since, "--since") or datetime.now(UTC)
    with common.app() as opened:
        result = evaluate_labels(
            opened.db,
            build_embedder(opened.settings),
            corpus,
            moment,
            min_probability=opened.settings.retrieval.label_min_probability,
        )
    data = result.report.as_json()
    emit(data, as_json, lambda: fields([(k.replace("_", " "), v) for k, v in data.items()]))
    if not as_json:
        console.print(f"learned from {result.trained_on} labelled items")
