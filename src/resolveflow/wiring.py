"""Everything is wired here: settings -> database, GitHub client, executor, reconciler."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from resolveflow.config import Settings
from resolveflow.domain.triage_policy import DEFAULT_POLICY, PolicyFile, parse_policy
from resolveflow.errors import ConfigError
from resolveflow.execution.credentials import ApproverTokenLookup
from resolveflow.execution.gate import Executor
from resolveflow.execution.lease import GateSettings
from resolveflow.execution.reconcile import Reconciler
from resolveflow.store.database import Connection, Database
from resolveflow.store.embedded import embedded_database_url
from resolveflow.store.migrate import upgrade

if TYPE_CHECKING:
    # Heavy imports (LangGraph, procrastinate, cryptography) stay out of every CLI start-up;
    # the functions below import them when they are first needed.
    from psycopg_pool import ConnectionPool

    from resolveflow.adapters.github.protocol import GitHub
    from resolveflow.workflows.runs import RunController

logger = logging.getLogger(__name__)

LEASE_TIMEOUT_RATIO = 5


def database_url(settings: Settings) -> str:
    if settings.database_url is not None:
        return settings.database_url.get_secret_value()
    return embedded_database_url(settings.home)


def gate_settings(settings: Settings) -> GateSettings:
    # The lease must outlive one whole request, or a reconciler could take over mid-request. httpx
    # applies the timeout per phase (pool wait, connect, write, read), so one call can take up to
    # about four timeouts; five leaves a margin.
    if settings.lease_seconds < settings.github_timeout_seconds * LEASE_TIMEOUT_RATIO:
        raise ConfigError(
            f"RESOLVEFLOW_LEASE_SECONDS must be at least {LEASE_TIMEOUT_RATIO} times "
            "RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS"
        )
    return GateSettings(
        lease_seconds=settings.lease_seconds,
        rate_limit_max_waits=settings.rate_limit_max_waits,
        rate_limit_max_wait_seconds=settings.rate_limit_max_wait_seconds,
        unavailable_retry_seconds=settings.unavailable_retry_seconds,
    )


def github_client(settings: Settings) -> GitHub:
    from resolveflow.adapters.github.client import GitHubKitClient

    token = settings.github_token.get_secret_value() if settings.github_token else None
    return GitHubKitClient(settings.github_api_url, token, settings.github_timeout_seconds)


@dataclass
class App:
    settings: Settings
    db: Database
    _github: GitHub | None = field(default=None, repr=False)
    _checkpoint_pool: ConnectionPool[Any] | None = field(default=None, repr=False)

    @property
    def github(self) -> GitHub:
        if self._github is None:
            self._github = github_client(self.settings)
        return self._github

    def executor(self) -> Executor:
        return Executor(
            self.db, self.github, gate_settings(self.settings), token_lookup=self.token_lookup()
        )

    def reconciler(self) -> Reconciler:
        return Reconciler(
            self.db, self.github, gate_settings(self.settings), token_lookup=self.token_lookup()
        )

    def token_lookup(self) -> ApproverTokenLookup | None:
        """Approvers who signed in with GitHub have their token stored encrypted; the executor
        posts what they approved with it, so GitHub shows who posted."""
        key = self.settings.token_encryption_key
        if key is None:
            return None
        from resolveflow.store import web as web_store
        from resolveflow.store.token_cipher import TokenCipher

        cipher = TokenCipher(key.get_secret_value())

        def lookup(conn: Connection, tenant_id: UUID, principal_id: UUID) -> str | None:
            return web_store.user_token(conn, cipher, tenant_id, principal_id)

        return lookup

    def policy(self) -> PolicyFile:
        path = self.settings.policy_file
        if path is None:
            return DEFAULT_POLICY
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the policy file {path}: {exc.strerror}") from None
        return parse_policy(text, str(path))

    def run_controller(self) -> RunController:
        """The triage graph with its Postgres checkpointer, and the run lease around it."""
        from resolveflow.workflows.checkpoints import checkpoint_saver
        from resolveflow.workflows.runs import RunController
        from resolveflow.workflows.triage import TriageDeps, build_triage_graph

        if self._checkpoint_pool is None:
            self._checkpoint_pool = self.db.autocommit_pool()
        from resolveflow.workflows.investigate import build_investigator

        investigator = build_investigator(
            self.db,
            self.settings,
            self.policy,
            embedder=build_embedder(self.settings),
            search_params=search_params(self.settings),
        )
        deps = TriageDeps(
            db=self.db,
            github=self.github,
            policy=self.policy,
            executor=self.executor,
            investigator=investigator,
        )
        graph = build_triage_graph(deps, checkpoint_saver(self._checkpoint_pool))
        return RunController(
            db=self.db,
            graph=graph,
            lease_seconds=self.settings.run_lease_seconds,
            approval_ttl_seconds=self.settings.approval_ttl_seconds,
        )

    def close(self) -> None:
        if self._checkpoint_pool is not None:
            self._checkpoint_pool.close()


def migrate(url: str) -> list[str]:
    """SQL migrations, then the LangGraph checkpoint tables (created by the saver's own setup),
    both as the owner; the runtime role is then granted use of the checkpoint tables."""
    probe = Database(url)
    with probe.owner_connection() as conn:
        return [m.version for m in upgrade(conn, after=setup_libraries)]


@contextmanager
def open_app(settings: Settings, *, auto_migrate: bool = True) -> Iterator[App]:
    """Open the database (starting the embedded one if needed), bring its schema up to date."""
    url = database_url(settings)
    if auto_migrate:
        migrate(url)
    db = Database(
        url,
        max_size=settings.db_pool_max_size,
        connect_timeout=settings.db_connect_timeout_seconds,
        statement_timeout_ms=settings.db_statement_timeout_ms,
    )
    with db:
        app = App(settings=settings, db=db)
        try:
            yield app
        finally:
            app.close()


def setup_libraries(conn: Connection) -> None:
    """Schema that libraries own (LangGraph's checkpoints, procrastinate's queue), as the owner,
    under the migration lock."""
    from resolveflow.store.queue import setup_queue

    setup_checkpoints(conn)
    setup_queue(conn)


def setup_checkpoints(conn: Connection) -> None:
    """The saver's setup is idempotent (it keeps its own migration table)."""
    from resolveflow.store.queries import q
    from resolveflow.workflows.checkpoints import checkpoint_saver

    checkpoint_saver(conn).setup()
    granted = conn.execute(q("runs", "checkpoint_tables_granted")).fetchone()
    if not (granted and granted["granted"]):
        conn.execute(q("runs", "grant_checkpoint_tables"))


# --- retrieval ----------------------------------------------------------------------------------

# Imported here rather than at the top: this block is the retrieval work's only edit of the file.
from resolveflow.adapters.embedder.protocol import Embedder  # noqa: E402
from resolveflow.retrieval.fusion import FusionParams  # noqa: E402
from resolveflow.retrieval.search import SearchParams  # noqa: E402


def build_embedder(settings: Settings) -> Embedder:
    """The configured embedder (local MiniLM by default). Models load lazily on first use."""
    if settings.embedder == "fake":
        from resolveflow.adapters.embedder.hashing import HashingEmbedder

        return HashingEmbedder()
    if settings.embedder == "openai":
        from resolveflow.adapters.embedder.openai_embeddings import OpenAIEmbedder

        if not settings.openai_embeddings_base_url:
            raise ConfigError(
                "RESOLVEFLOW_EMBEDDER=openai needs RESOLVEFLOW_OPENAI_EMBEDDINGS_BASE_URL"
            )
        key = settings.openai_embeddings_api_key
        return OpenAIEmbedder(
            settings.openai_embeddings_base_url,
            key.get_secret_value() if key else None,
            settings.openai_embeddings_model,
            dimensions=settings.openai_embeddings_dimensions,
            timeout_seconds=settings.embedding_timeout_seconds,
        )
    from resolveflow.adapters.embedder.local import LocalMiniLM

    return LocalMiniLM(
        max_seq_length=settings.embedding_max_seq_length,
        quantize=settings.embedding_quantize,
        batch_size=settings.embedding_batch_size,
    )


def search_params(settings: Settings) -> SearchParams:
    return SearchParams(
        fusion=FusionParams(
            method=settings.fusion_method,
            vector_weight=settings.fusion_vector_weight,
            lexical_weight=settings.fusion_lexical_weight,
            rrf_k=settings.fusion_rrf_k,
        ),
        candidates=settings.search_candidates,
        exact_max_chunks=settings.search_exact_max_chunks,
        ef_search_min=settings.hnsw_ef_search_min,
        ef_search_max=settings.hnsw_ef_search_max,
        max_terms=settings.search_max_terms,
        max_term_share=settings.search_max_term_share,
        max_postings=settings.search_max_postings,
    )
