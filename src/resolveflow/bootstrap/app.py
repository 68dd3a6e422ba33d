"""The composition root: settings -> every long-lived object.

``App`` opens nothing costly up front. Its accessors build the GitHub client, the embedder, the
searcher, the chat model, the token cipher and the triage graph's ``RunController`` (with its
checkpoint pool) on first use and share them across threads: the web app's request threads and
the worker's jobs use the same ones, so each is built once per process and closed by ``close()``.
``executor()`` and ``reconciler()`` are cheap and return a new one, with its own lease owner id,
each time. The web app, the worker and the CLI receive what they need from here; nothing else
constructs these objects.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from resolveflow.bootstrap import kinds as gate_kinds
from resolveflow.bootstrap import schema as schema_setup
from resolveflow.bootstrap.embedder import build_embedder, build_reranker
from resolveflow.config import ModelSettings, Settings
from resolveflow.errors import ConfigError
from resolveflow.store.database import Connection, Database
from resolveflow.store.embedded import embedded_database_url

if TYPE_CHECKING:
    # Heavy imports (LangGraph, procrastinate, cryptography, numpy, the model clients, the
    # executor and the search; also the kinds' executors, mail, pacing and the policy file's
    # product sections) stay out of every CLI start-up (tests/core/unit/test_cli_import_budget.py);
    # the functions below import them when they are first needed.
    from resolveflow.accounts.sessions import UserGrant
    from resolveflow.adapters.embedder.protocol import Embedder
    from resolveflow.adapters.github.oauth import GitHubOAuth
    from resolveflow.adapters.github.protocol import GitHub
    from resolveflow.adapters.reranker.protocol import Reranker
    from resolveflow.bootstrap.github_app import ConfiguredApp
    from resolveflow.bootstrap.gitlab import TenantGitLab
    from resolveflow.bootstrap.health import WorkerStatus
    from resolveflow.bootstrap.mail import TenantMail
    from resolveflow.gate.approvals import AliasLookup, MailboxLookup
    from resolveflow.gate.credentials import ApproverTokenLookup, Configured
    from resolveflow.gate.executor import Executor
    from resolveflow.gate.lease import GateSettings
    from resolveflow.gate.quiet import Quiet
    from resolveflow.gate.reconcile import Reconciler
    from resolveflow.llm.protocol import ChatModel
    from resolveflow.notify.notifier import Notifier
    from resolveflow.policy_file import PolicyFile
    from resolveflow.retrieval.extraction import ExtractionLimits
    from resolveflow.retrieval.ingest import Indexer
    from resolveflow.retrieval.params import SearchParams
    from resolveflow.retrieval.search import Searcher
    from resolveflow.store.token_cipher import TokenCipher
    from resolveflow.triage.graph.runs import RunController
    from resolveflow.triage.investigation import InvestigationConfig
    from resolveflow.triage.parts import LabelModels, PartsMaker

logger = logging.getLogger(__name__)

# The schema's start-up steps live in schema_setup; the CLI, tests and benchmarks take them from here.
migrate = schema_setup.migrate
after_upgrade = schema_setup.after_upgrade
setup_libraries = schema_setup.setup_libraries
setup_checkpoints = schema_setup.setup_checkpoints

LEASE_TIMEOUT_RATIO = 5
T = TypeVar("T")

# Whatever runs in this process reads proposals and decides through the gate, which is given the
# products' kinds' rules and triage's runs here (every entry point and the tests import this).
gate_kinds.install()


def database_url(settings: Settings) -> str:
    if settings.database.url is not None:
        return settings.database.url.get_secret_value()
    return embedded_database_url(settings.database.home)


def gate_settings(settings: Settings) -> GateSettings:
    from resolveflow.adapters.github.protocol import DEADLINE_TIMEOUTS
    from resolveflow.bootstrap.pace import pace_settings
    from resolveflow.gate.lease import GateSettings

    # A request starts within one timeout of its attempt row and the client cuts it at
    # DEADLINE_TIMEOUTS timeouts, plus one last socket read; the lease covers that with room.
    # GitLab writes go through the same gate with their own timeout: the longer one counts.
    executor, timeout = settings.executor, settings.github.timeout_seconds
    if settings.gitlab.url is not None:
        timeout = max(timeout, settings.gitlab.timeout_seconds)
    if executor.lease_seconds < timeout * LEASE_TIMEOUT_RATIO:
        raise ConfigError(
            f"RESOLVEFLOW_LEASE_SECONDS must be at least {LEASE_TIMEOUT_RATIO} times "
            "RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS (or RESOLVEFLOW_GITLAB_TIMEOUT_SECONDS if longer)"
        )
    return GateSettings(
        lease_seconds=executor.lease_seconds,
        rate_limit_max_waits=executor.rate_limit_max_waits,
        rate_limit_max_wait_seconds=executor.rate_limit_max_wait_seconds,
        unavailable_retry_seconds=executor.unavailable_retry_seconds,
        send_slack_seconds=timeout,
        request_deadline_seconds=timeout * (DEADLINE_TIMEOUTS + 1),
        pace=pace_settings(settings.pace),
    )


def github_client(settings: Settings) -> GitHub:
    from resolveflow.adapters.github.client import GitHubKitClient
    from resolveflow.adapters.github.protocol import DEADLINE_TIMEOUTS

    github = settings.github
    token = github.token.get_secret_value() if github.token else None
    deadline = github.timeout_seconds * DEADLINE_TIMEOUTS
    return GitHubKitClient(github.api_url, token, github.timeout_seconds, deadline_seconds=deadline)


def search_params(settings: Settings) -> SearchParams:
    from resolveflow.retrieval.fusion import FusionParams
    from resolveflow.retrieval.params import SearchParams

    retrieval = settings.retrieval
    return SearchParams(
        fusion=FusionParams(
            method=retrieval.fusion_method,
            vector_weight=retrieval.fusion_vector_weight,
            lexical_weight=retrieval.fusion_lexical_weight,
            rrf_k=retrieval.fusion_rrf_k,
        ),
        candidates=retrieval.search_candidates,
        exact_max_chunks=retrieval.search_exact_max_chunks,
        ef_search_min=retrieval.hnsw_ef_search_min,
        ef_search_max=retrieval.hnsw_ef_search_max,
        max_terms=retrieval.search_max_terms,
        max_term_share=retrieval.search_max_term_share,
        max_postings=retrieval.search_max_postings,
    )


def extraction_limits(settings: Settings) -> ExtractionLimits:
    """How ``index docs`` and ``POST /api/v1/documents`` bound a document's text extraction."""
    from resolveflow.retrieval.document_bounds import TextLimits
    from resolveflow.retrieval.extraction import ExtractionLimits

    retrieval = settings.retrieval
    return ExtractionLimits(
        max_bytes=retrieval.document_max_bytes,
        text=TextLimits(
            max_chars=retrieval.document_max_chars,
            page_max_chars=retrieval.document_page_max_chars,
            page_max_stream_bytes=retrieval.document_page_max_stream_bytes,
            max_depth=retrieval.document_max_depth,
        ),
        timeout_seconds=retrieval.document_extract_timeout_seconds,
        memory_bytes=retrieval.document_extract_memory_bytes,
        workers=retrieval.document_extract_workers,
    )


def build_model(settings: Settings) -> ChatModel | None:
    """The configured chat model; None for provider ``none`` (the default)."""
    model = settings.model
    if model.provider == "none":
        return None
    if model.provider == "scripted":
        from resolveflow.adapters.llm.scripted import ScriptedModel, load_script

        if model.scripted_file is None:
            raise ConfigError(
                "RESOLVEFLOW_MODEL_PROVIDER=scripted needs RESOLVEFLOW_SCRIPTED_MODEL_FILE"
            )
        return ScriptedModel(
            load_script(model.scripted_file),
            model=model.name,
            invalid_output_attempts=model.invalid_output_attempts,
        )
    bounds: dict[str, Any] = {
        "timeout_seconds": model.timeout_seconds,
        "max_retries": model.max_retries,
        "max_wait_seconds": model.max_wait_seconds,
        "invalid_output_attempts": model.invalid_output_attempts,
        "output_tokens": model.max_tokens,
        "deadline_seconds": model.deadline_seconds,
        "schema_limits": model.schema_limits,
    }
    if model.provider == "llamacpp":
        return _local_model(model, bounds)
    from resolveflow.adapters.llm.openai_chat import OpenAIChatModel

    key = model.openai_api_key
    return OpenAIChatModel(
        model.openai_base_url, key.get_secret_value() if key else None, model.name, **bounds
    )


def _local_model(model: ModelSettings, bounds: dict[str, Any]) -> ChatModel:
    """A llama.cpp server started here for the configured GGUF file (one line when it cannot)."""
    from resolveflow.adapters.llm.llamacpp_server import local_model

    if model.gguf is None:
        raise ConfigError(
            "RESOLVEFLOW_MODEL_PROVIDER=llamacpp needs RESOLVEFLOW_MODEL_GGUF (a file)"
        )
    if not model.gguf.is_file():
        raise ConfigError(f"RESOLVEFLOW_MODEL_GGUF: no such file: {model.gguf}")
    return local_model(
        model.gguf,
        threads=model.threads,
        n_ctx=model.context_tokens,
        start_seconds=model.start_seconds,
        **bounds,
    )


def investigation_config(settings: Settings) -> InvestigationConfig:
    from resolveflow.triage.investigation import InvestigationConfig

    return InvestigationConfig(
        relevance_floor=settings.investigation.relevance_floor,
        top_k=settings.investigation.top_k,
        daily_model_calls=settings.limits.model_calls_per_day,
    )


def load_policy(settings: Settings) -> PolicyFile:
    """The policy file (``RESOLVEFLOW_POLICY_FILE``), read now; the built-in one when unset."""
    from resolveflow.bootstrap.policy import PRODUCT_SECTIONS
    from resolveflow.policy_file import DEFAULT_POLICY, parse_policy

    path = settings.triage.policy_file
    if path is None:
        return DEFAULT_POLICY
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the policy file {path}: {exc.strerror}") from None
    return parse_policy(text, str(path), PRODUCT_SECTIONS)


@dataclass
class App:
    settings: Settings
    db: Database
    _github: GitHub | None = field(default=None, repr=False)  # tests pass their own
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _built: dict[str, Any] = field(default_factory=dict, repr=False)
    # Set by a worker running in this process (``serve --with-worker``); /readyz reads it.
    worker_status: WorkerStatus | None = field(default=None, repr=False)
    # The GitHub App's clock (token expiry, JWTs); tests move it with the sandbox forge's.
    github_app_clock: Callable[[], datetime] | None = field(default=None, repr=False)

    def _once(self, name: str, build: Callable[[], T]) -> T:
        # Re-entrant: building the run controller asks for the searcher and the model.
        with self._lock:
            if name not in self._built:
                self._built[name] = build()
            return cast(T, self._built[name])

    @property
    def github(self) -> GitHub:
        if self._github is not None:
            return self._github
        return self._once("github", self._github_client)

    def _github_client(self) -> GitHub:
        """The service client; with a GitHub App configured, its installation tokens are the
        service credential (bootstrap/github_app.py). Decided once per process: an App created
        with the manifest is used from the next start."""
        client = github_client(self.settings)
        configured = self.github_app()
        if configured is None:
            return client
        from resolveflow.bootstrap.github_app import app_github

        cipher = self.token_cipher()
        return app_github(client, self.settings, self.db, cipher, configured, self._app_clock())

    def _app_clock(self) -> Callable[[], datetime]:
        from resolveflow.accounts.github_app import utc_now

        return self.github_app_clock or utc_now

    def github_app(self) -> ConfiguredApp | None:
        """The GitHub App this deployment authenticates as, or None (docs/github-app.md)."""
        from resolveflow.bootstrap.github_app import configured_app

        return self._once(
            "github_app",
            lambda: configured_app(self.settings, self.db, self.token_cipher(), self._app_clock()),
        )

    def github_oauth(self) -> GitHubOAuth:
        """Sign-in with GitHub; ``ConfigError`` when the OAuth app is not configured."""
        github = self.settings.github
        if not github.oauth_client_id or github.oauth_client_secret is None:
            raise ConfigError(
                "sign-in with GitHub is not configured (RESOLVEFLOW_GITHUB_OAUTH_CLIENT_ID and "
                "RESOLVEFLOW_GITHUB_OAUTH_CLIENT_SECRET); use an API token instead"
            )
        from resolveflow.adapters.github.oauth import GitHubOAuth

        # Two plain requests per sign-in and no connection pool: nothing worth keeping.
        return GitHubOAuth(
            github.web_url,
            github.oauth_client_id,
            github.oauth_client_secret.get_secret_value(),
            scope=github.oauth_scope,
            timeout_seconds=github.timeout_seconds,
        )

    def embedder(self) -> Embedder:
        return self._once("embedder", lambda: build_embedder(self.settings))

    def reranker(self) -> Reranker | None:
        return self._once("reranker", lambda: build_reranker(self.settings))

    def searcher(self) -> Searcher:
        from resolveflow.retrieval.search import Searcher

        return self._once(
            "searcher", lambda: Searcher(self.db, self.embedder(), search_params(self.settings))
        )

    def triage_parts(self) -> PartsMaker:
        """The parts every triage run joins to its proposal (one label model cache a process)."""
        from resolveflow.triage.parts import PartsConfig, PartsMaker

        def made() -> PartsMaker:
            from resolveflow.bootstrap.refine import clone_histories
            from resolveflow.bootstrap.triage_docs import ask_docs

            config = PartsConfig(
                retriever=self.searcher(),
                investigation=investigation_config(self.settings),
                history_for=clone_histories(self.policy),
                docs=ask_docs(self.db, self.searcher()),
            )
            return PartsMaker(self.label_models().for_issue, config, self.db)

        return self._once("triage_parts", made)

    def label_models(self) -> LabelModels:
        """The process's label models, one per repository, kept as current as the index."""
        from resolveflow.triage.parts import LabelModels

        wait = self.settings.triage.label_model_wait_seconds
        return self._once("label_models", lambda: LabelModels(self.db, wait_seconds=wait))

    def indexer(self) -> Indexer:
        from resolveflow.retrieval.ingest import Indexer

        return Indexer(self.db, self.embedder())

    def model(self) -> ChatModel | None:
        return self._once("model", lambda: build_model(self.settings))

    def executor(self) -> Executor:
        from resolveflow.bootstrap.pace import schedule_execute
        from resolveflow.gate.executor import Executor

        return Executor(
            self.db,
            self.github,
            self.mail_gate_settings(),
            token_lookup=self.token_lookup(),
            schedule=schedule_execute,
            **self._reach(),
        )

    def reconciler(self) -> Reconciler:
        from resolveflow.gate.reconcile import Reconciler

        return Reconciler(
            self.db,
            self.github,
            self.mail_gate_settings(),
            token_lookup=self.token_lookup(),
            **self._reach(),
        )

    def _reach(self) -> dict[str, Any]:
        """GitLab per tenant for the gate's own kind, and the offered kinds over this app's mail."""
        systems = self.outside_systems()
        return {"gitlab": systems["gitlab"], "offered": gate_kinds.offered(systems["mail"])}

    def mail_gate_settings(self) -> GateSettings:
        """``gate_settings``, widened when the policy file configures any mailbox."""
        from resolveflow.bootstrap.mail import widen_for_mail

        gate = gate_settings(self.settings)
        any_mailbox = any(tenant.mailboxes for tenant in self.policy().tenants.values())
        return widen_for_mail(gate, self.settings.mail) if any_mailbox else gate

    def mail(self) -> TenantMail:
        """Each tenant's mailboxes: SMTP endpoints, secrets, attachments, the Sent folder."""
        from resolveflow.bootstrap.mail import TenantMail

        return self._once(
            "mail", lambda: TenantMail(self.db, self.settings, self.policy, self.token_cipher())
        )

    def outside_systems(self) -> dict[str, Any]:
        """What the executor and the reconciler reach besides GitHub: GitLab and mail."""
        return {"gitlab": self.gitlab(), "mail": self.mail()}

    def mailbox_lookup(self) -> MailboxLookup:
        """Tenant id -> its mailboxes in the policy file, for the approval checks."""
        return self.mail().configured_mailboxes

    def alias_lookup(self) -> AliasLookup:
        """Tenant id -> its GitLab project aliases in the policy file, for the approval checks."""
        return self.gitlab().project_aliases

    def gitlab(self) -> TenantGitLab:
        """GitLab per tenant: its own token from the store, its aliases from the policy file."""
        from resolveflow.bootstrap.gitlab import TenantGitLab

        return self._once(
            "gitlab", lambda: TenantGitLab(self.db, self.settings, self.policy, self.token_cipher())
        )

    def token_cipher(self) -> TokenCipher | None:
        """Encrypts principals' own GitHub tokens at rest; None without
        RESOLVEFLOW_TOKEN_ENCRYPTION_KEY."""
        return self._once("token_cipher", lambda: build_token_cipher(self.settings))

    def configured_credentials(self) -> Configured:
        """What ``execute`` and the worker check each due execution against, per forge."""
        from resolveflow.gate.credentials import Configured

        has = (self.settings.github.token, self.token_cipher(), self.settings.gitlab.url)
        configured = Configured(*(value is not None for value in has))
        if not configured.service_token and self.github_app() is not None:
            # the App's installation tokens are the service credential
            return Configured(True, configured.key_configured, configured.gitlab_url)
        return configured

    def token_lookup(self) -> ApproverTokenLookup | None:
        """Approvers' own GitHub tokens (given by sign-in or by an operator), decrypted from the
        one store; the executor posts what they approved with them, so GitHub shows who posted."""
        cipher = self.token_cipher()
        if cipher is None:
            return None
        from resolveflow.store import tenants as tenant_store

        def lookup(conn: Connection, tenant_id: UUID, principal_id: UUID) -> str | None:
            return tenant_store.github_token(conn, cipher, tenant_id, principal_id)

        return lookup

    def user_grants(self) -> dict[str, UserGrant]:
        """Who may sign in with GitHub, as what (RESOLVEFLOW_WEB_USERS)."""
        from resolveflow.accounts.sessions import parse_users

        return self._once("user_grants", lambda: parse_users(self.settings.web.users))

    def policy(self) -> PolicyFile:
        return load_policy(self.settings)

    def notifier(self) -> Notifier | None:
        """Messages about waiting proposals (``bootstrap/notify.py``); None when no tenant can
        have a webhook (no process webhook and no cipher for tenants' own)."""
        from resolveflow.bootstrap.notify import build_notifier

        return self._once(
            "notifier", lambda: build_notifier(self.settings, self.db, self.token_cipher())
        )

    def quiet(self) -> Quiet:
        """Where the products' suggestions go (the policy file's modes, the automatic move)."""
        from resolveflow.gate.quiet import Quiet

        return Quiet(self.policy(), self.settings.suggestions.rules())

    def run_controller(self) -> RunController:
        """The triage graph with its Postgres checkpointer, and the run lease around it."""
        return self._once("run_controller", self._build_run_controller)

    def run_handle(self) -> RunOnDemand:
        """The run side of a decision, the graph built only when a decision names a run."""
        return RunOnDemand(self)

    def _build_run_controller(self) -> RunController:
        from resolveflow.store.checkpoints import checkpoint_saver
        from resolveflow.triage.graph.build import TriageDeps, build_triage_graph
        from resolveflow.triage.graph.investigate import make_investigator
        from resolveflow.triage.graph.runs import RunController

        pool = self._once("checkpoint_pool", self.db.autocommit_pool)
        investigator = make_investigator(
            self.db,
            self.searcher(),
            self.model(),
            investigation_config(self.settings),
            self.policy,
        )
        deps = TriageDeps(
            db=self.db,
            github=self.github,
            policy=self.policy,
            executor=self.executor,
            investigator=investigator,
            quiet_rules=self.settings.suggestions.rules(),
            parts=self.triage_parts(),
        )
        return RunController(
            db=self.db,
            graph=build_triage_graph(deps, checkpoint_saver(pool)),
            lease_seconds=self.settings.triage.run_lease_seconds,
            approval_ttl_seconds=self.settings.approval.ttl_seconds,
            mailboxes=self.mailbox_lookup(),
            aliases=self.gitlab().project_aliases,
        )

    def close(self) -> None:
        """Close what was built here (the checkpoint pool, HTTP clients)."""
        with self._lock:
            built, self._built = self._built, {}
        for name, thing in built.items():
            close = getattr(thing, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # closing the rest matters more than one failure
                    logger.warning("could not close %s", name, exc_info=True)


def build_token_cipher(settings: Settings) -> TokenCipher | None:
    key = settings.web.token_encryption_key
    if key is None:
        return None
    from resolveflow.store.token_cipher import TokenCipher

    return TokenCipher(key.get_secret_value())


@contextmanager
def open_app(settings: Settings, *, auto_migrate: bool = True) -> Iterator[App]:
    """Open the database (starting the embedded one if needed), bring its schema up to date."""
    url = database_url(settings)
    if auto_migrate:
        migrate(url, build_token_cipher(settings))
    db = Database(
        url,
        max_size=settings.database.pool_max_size,
        connect_timeout=settings.database.connect_timeout_seconds,
        statement_timeout_ms=settings.database.statement_timeout_ms,
        reconnect_seconds=settings.database.reconnect_seconds,
    )
    with db:
        app = App(settings=settings, db=db)
        try:
            yield app
        finally:
            app.close()


@dataclass(frozen=True)
class RunOnDemand:
    """The run side of a decision (``decisions.RunHandle``), built when a decision first names a
    run: the triage graph, its checkpoint pool, the search and the model load for a run's
    proposal only, never for an email or a proposal of no run (the CLI and the web alike)."""

    opened: App

    def at_pause(self, run_id: UUID) -> bool:
        return self.opened.run_controller().at_pause(run_id)

    def continue_with(self, tenant_id: UUID, run_id: UUID, approval_id: UUID) -> None:
        self.opened.run_controller().continue_with(tenant_id, run_id, approval_id)

    def reach_pause(self, tenant_id: UUID, run_id: UUID) -> bool:
        return self.opened.run_controller().reach_pause(tenant_id, run_id)
