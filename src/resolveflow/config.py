"""All configuration, read once from ``RESOLVEFLOW_*`` environment variables (or a ``.env`` file).

Settings come in groups (``settings.database.url``, ``settings.github.token``, ...). Each group is
its own pydantic-settings class with an ``env_prefix``, so a field's variable is the prefix plus its
name in capitals; where a variable's historical name does not follow that pattern, the field names
it with ``validation_alias`` (``RESOLVEFLOW_DATABASE_URL`` is ``database.url``). ``env_names()``
lists every variable. Defaults that belong to a lower layer's parameter type (the executor gate's
lease, the search parameters, the investigation's ``top_k``) are read from that type, so each is
written down once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import NoDecode, SettingsConfigDict

# The outside systems' groups live in config_systems; they are re-exported from here.
from resolveflow.config_systems import (
    DAY_SECONDS,
    PREFIX,
    DatabaseSettings,
    EmbeddingSettings,
    GitHubSettings,
    GitLabSettings,
    MailSettings,
    ModelSettings,
    SettingsGroup,
    http_url,
)
from resolveflow.domain.network_addresses import AddressPolicy
from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.gate.domain.quiet import QuietRules
from resolveflow.gate.lease import GateSettings
from resolveflow.notify.domain.destination import check_host
from resolveflow.retrieval import loaders
from resolveflow.retrieval.document_bounds import TextLimits as _Text
from resolveflow.retrieval.extraction import ExtractionLimits as _Ex
from resolveflow.retrieval.fusion import FusionParams
from resolveflow.retrieval.params import SearchParams
from resolveflow.triage.investigation_config import InvestigationConfig

__all__ = [
    "DAY_SECONDS",
    "PREFIX",
    "ApprovalSettings",
    "CliSettings",
    "DatabaseSettings",
    "EmbeddingSettings",
    "ExecutorSettings",
    "GitHubSettings",
    "GitLabSettings",
    "InvestigationSettings",
    "LimitSettings",
    "MailSettings",
    "McpSettings",
    "ModelSettings",
    "NotifySettings",
    "PaceConfig",
    "RetrievalSettings",
    "Settings",
    "TriageSettings",
    "WebSettings",
    "WebhookSettings",
    "WorkerSettings",
    "env_name",
    "env_names",
    "load_settings",
]


class ExecutorSettings(SettingsGroup):
    """The executor gate (``gate.lease.GateSettings``) and how often it is driven."""

    lease_seconds: float = Field(default=GateSettings.lease_seconds, gt=0)
    rate_limit_max_waits: int = Field(default=GateSettings.rate_limit_max_waits, ge=0)
    rate_limit_max_wait_seconds: float = Field(
        default=GateSettings.rate_limit_max_wait_seconds, gt=0
    )
    unavailable_retry_seconds: float = Field(default=GateSettings.unavailable_retry_seconds, gt=0)
    poll_seconds: float = Field(
        default=2.0, gt=0, validation_alias="RESOLVEFLOW_EXECUTOR_POLL_SECONDS"
    )
    reconcile_interval_seconds: float = Field(default=300.0, ge=0)


class PaceConfig(SettingsGroup):
    """Write pacing per credential (``gate/pace.py``): at least ``*_min_interval_seconds``
    between writes, ``*_burst`` at once, never more than ``*_per_hour`` in an hour. GitHub's:
    its secondary limits (80 a minute, 500 an hour, a second apart)."""

    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}PACE_")

    enabled: bool = True
    github_min_interval_seconds: float = Field(default=1.0, ge=0, le=60)
    github_burst: int = Field(default=60, ge=1, le=80)
    github_per_hour: int = Field(default=500, ge=2, le=100_000)
    gitlab_min_interval_seconds: float = Field(default=0.5, ge=0, le=60)
    gitlab_burst: int = Field(default=60, ge=1)
    gitlab_per_hour: int = Field(default=3000, ge=2, le=1_000_000)
    smtp_min_interval_seconds: float = Field(default=1.0, ge=0, le=60)
    smtp_burst: int = Field(default=20, ge=1)
    smtp_per_hour: int = Field(default=300, ge=2, le=1_000_000)

    @model_validator(mode="after")
    def _burst_below_hourly(self) -> PaceConfig:
        for target in ("github", "gitlab", "smtp"):
            if getattr(self, f"{target}_burst") >= getattr(self, f"{target}_per_hour"):
                raise ValueError(
                    f"RESOLVEFLOW_PACE_{target.upper()}_BURST must be below "
                    f"RESOLVEFLOW_PACE_{target.upper()}_PER_HOUR"
                )
        return self


class ApprovalSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}APPROVAL_")

    # How long a proposal may wait for approval, and how long an approval stays valid.
    ttl_seconds: int = Field(default=7 * DAY_SECONDS, ge=1)


class TriageSettings(SettingsGroup):
    policy_file: Path | None = None  # per-repository policy (TOML); unset: the built-in one
    run_lease_seconds: float = Field(default=300.0, gt=0)
    # How long a run that finds the labelled history moved waits for the model that knows it.
    label_model_wait_seconds: float = Field(default=2.0, ge=0, le=600)


class WebSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}WEB_")

    host: str = "127.0.0.1"  # where ``serve`` listens
    port: int = Field(default=8000, ge=0, le=65535)
    # The address people reach the web app at; the OAuth redirect URL is built from it.
    public_url: str | None = None
    session_ttl_seconds: int = Field(default=8 * 3600, ge=60)
    # Browsers send Secure cookies to https and to localhost only; plain-http hosts other than
    # localhost need this off (never in production).
    cookie_secure: bool = True
    # GitHub login -> "tenant:role,role"; only listed logins may sign in (JSON object).
    users: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict)
    # Keys in Fernet's format, comma-separated, primary first: every principal's own GitHub token
    # (from a sign-in or `principals add --github-token-stdin`) is encrypted with the primary;
    # the others still decrypt, until `resolveflow tokens reencrypt` (store/token_cipher.py).
    token_encryption_key: SecretStr | None = Field(
        default=None, validation_alias="RESOLVEFLOW_TOKEN_ENCRYPTION_KEY"
    )
    # Any body but a document's or a webhook's (own caps), 413 past it; fits a 2 MB mail twice.
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=64 * 1024, le=100 * 1024 * 1024)
    max_json_depth: int = Field(default=32, ge=4, le=500)  # deeper JSON is 400; ours nest 3
    # Refused sign-in link POSTs per client address and per tenant in a window; past either, 429
    # and no audit row each (accounts/refusal_limits.py). A valid link always signs in.
    sign_in_refusals_per_address: int = Field(default=10, ge=1, le=100_000)
    sign_in_refusals_per_tenant: int = Field(default=50, ge=1, le=1_000_000)
    sign_in_refusal_window_seconds: int = Field(default=300, ge=1, le=86_400)

    @field_validator("public_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return http_url(value)

    @field_validator("users", mode="before")
    @classmethod
    def _users_json(cls, value: Any) -> Any:
        # Parsed here rather than by the settings source, so bad JSON is a validation error
        # that names the variable.
        return json.loads(value) if isinstance(value, str) else value


class WebhookSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}WEBHOOK_")

    secret: SecretStr | None = Field(
        default=None, validation_alias="RESOLVEFLOW_GITHUB_WEBHOOK_SECRET"
    )
    auto_triage: bool = True
    # GitHub never sends more than 25 MB; a body past the cap is refused (413) as it streams in.
    max_body_bytes: int = Field(default=25 * 1024 * 1024, ge=1024, le=100 * 1024 * 1024)
    # Deliveries are pruned after this many days, and an event whose updated_at is older is not
    # acted on (its record may be gone, so a replay could not be told apart). GitHub offers
    # redelivery for 3 days, hence the floor.
    retention_days: int = Field(default=30, ge=3, le=3650)


class WorkerSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}WORKER_")

    concurrency: int = Field(default=2, ge=1, le=64)
    reconcile_cron: str = "* * * * *"
    # Riding out a database outage (worker/supervise.py): the wait before the first reconnect,
    # doubled after each failed one up to the cap (which also caps the first), each shortened by
    # up to ``jitter`` of itself so that many workers do not reconnect in step.
    reconnect_initial_seconds: float = Field(default=1.0, gt=0, le=60)
    reconnect_max_seconds: float = Field(default=30.0, gt=0, le=600)
    reconnect_jitter: float = Field(default=0.5, ge=0, le=1)


class McpSettings(SettingsGroup):
    """The MCP server's bounds (``mcp_server/``, docs/mcp.md): what one agent may hold open."""

    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}MCP_")

    # Open ``GET /mcp`` event streams of one principal in one ``serve`` process; past it, 429.
    max_streams_per_principal: int = Field(default=4, ge=1, le=1000)
    # A stream that has carried no message for this long is closed (stateless: none ever does).
    stream_idle_seconds: float = Field(default=300.0, gt=0, le=86_400)
    # One JSON-RPC message (one line) on stdio; a longer line is refused without being kept.
    max_message_bytes: int = Field(default=4 * 1024 * 1024, ge=64 * 1024, le=100 * 1024 * 1024)


class NotifySettings(SettingsGroup):
    """Messages about waiting proposals (``notify/``, docs/notifications.md): one webhook for the
    process; unset URL: none are sent."""

    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}NOTIFY_")

    # A Slack incoming-webhook URL is itself a credential: kept secret, never logged.
    url: SecretStr | None = None
    format: Literal["slack", "json"] = "slack"
    # The HMAC-SHA256 key; required by the json format (checked on this field, so that the
    # error names its variable).
    secret: SecretStr | None = Field(default=None, validate_default=True)
    remind_before_seconds: int = Field(default=DAY_SECONDS, ge=0)  # 0: no reminder
    timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    max_attempts: int = Field(default=5, ge=1, le=50)
    retry_base_seconds: float = Field(default=60.0, ge=0, le=86_400)
    retry_max_seconds: float = Field(default=3600.0, ge=0, le=7 * 86_400)
    # Hosts (host or host:port, comma-separated) a webhook may reach though they are loopback,
    # private, link-local or metadata addresses: an on-premises chat server, the sandbox
    # receiver. Every other such destination is refused, when set and when sent to.
    allowed_hosts: str = ""

    @field_validator("url")
    @classmethod
    def _url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            http_url(value.get_secret_value())
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, value: str) -> str:
        AddressPolicy.parse(value)  # a bad entry is a ValueError that names it
        return value

    def address_policy(self) -> AddressPolicy:
        return AddressPolicy.parse(self.allowed_hosts)

    @model_validator(mode="after")
    def _url_not_inward(self) -> NotifySettings:
        # The process's webhook is held to the tenants' destination policy from the start: an
        # internal host (and no exception for it) stops every command in one line.
        if self.url is not None:
            try:
                check_host(self.url.get_secret_value(), self.address_policy())
            except InvalidInput as exc:
                raise ValueError(f"RESOLVEFLOW_NOTIFY_URL: {exc.message}") from None
        return self

    @field_validator("secret")
    @classmethod
    def _json_is_signed(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        if value is None and info.data.get("url") and info.data.get("format") == "json":
            raise ValueError("required by the json format")
        return value


class SuggestionSettings(SettingsGroup):
    """Quiet by default (``gate/domain/quiet.py``): a kind whose acceptance in a place, over its
    last ``last`` decisions and at least ``minimum`` of them, falls below ``floor`` goes to the
    digest by itself."""

    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}SUGGESTIONS_")

    floor: float = Field(default=QuietRules.floor, ge=0, le=1)
    minimum: int = Field(default=QuietRules.minimum, ge=1, le=5000)
    last: int = Field(default=QuietRules.last, ge=1, le=5000)

    def rules(self) -> QuietRules:
        return QuietRules(self.floor, self.minimum, self.last)


class LimitSettings(SettingsGroup):
    """Per UTC day."""

    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}LIMIT_")

    runs_per_day: int = Field(default=100, ge=0)
    webhook_runs_per_day: int = Field(default=1000, ge=0)
    model_calls_per_day: int = Field(
        default=InvestigationConfig.daily_model_calls,
        ge=0,
        validation_alias="RESOLVEFLOW_MODEL_DAILY_CALLS_PER_PRINCIPAL",
    )


class RetrievalSettings(SettingsGroup):
    """Hybrid search (``retrieval.search.SearchParams``), label suggestions and crawling."""

    fusion_method: Literal["rrf", "weighted"] = FusionParams.method
    fusion_vector_weight: float = Field(default=FusionParams.vector_weight, ge=0)
    fusion_lexical_weight: float = Field(default=FusionParams.lexical_weight, ge=0)
    fusion_rrf_k: int = Field(default=FusionParams.rrf_k, ge=1)
    search_candidates: int = Field(default=SearchParams.candidates, ge=5, le=1000)
    search_exact_max_chunks: int = Field(default=SearchParams.exact_max_chunks, ge=0)
    hnsw_ef_search_min: int = Field(default=SearchParams.ef_search_min, ge=10, le=1000)
    hnsw_ef_search_max: int = Field(default=SearchParams.ef_search_max, ge=10, le=1000)
    search_max_terms: int = Field(default=SearchParams.max_terms, ge=1, le=200)
    search_max_term_share: float = Field(default=SearchParams.max_term_share, gt=0, le=1)
    search_max_postings: int = Field(default=SearchParams.max_postings, ge=1)
    label_min_probability: float = Field(default=0.35, ge=0, le=1)
    index_rate_limit_max_waits: int = Field(default=10, ge=0)
    # One document file (index docs, POST /api/v1/documents): larger ones are skipped / 413.
    document_max_bytes: int = Field(
        default=loaders.DEFAULT_MAX_BYTES, ge=1024, le=200 * 1024 * 1024
    )
    # Extracting a document's text (docs/retrieval.md#bounds): past one, refused in one line.
    document_max_chars: int = Field(default=_Text.max_chars, ge=1000)
    document_page_max_chars: int = Field(default=_Text.page_max_chars, ge=100)
    document_page_max_stream_bytes: int = Field(default=_Text.page_max_stream_bytes, ge=65536)
    document_max_depth: int = Field(default=_Text.max_depth, ge=8, le=400)  # 3 frames a level
    document_extract_timeout_seconds: float = Field(default=_Ex.timeout_seconds, gt=0, le=600)
    document_extract_memory_bytes: int = Field(default=_Ex.memory_bytes, ge=128 * 1024 * 1024)
    document_extract_workers: int = Field(default=_Ex.workers, ge=1, le=32)


class InvestigationSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}INVESTIGATION_")

    # Calibrated on dev data for the local MiniLM space: docs/review.md.
    relevance_floor: float = Field(
        default=0.15, ge=0, le=1, validation_alias="RESOLVEFLOW_RELEVANCE_FLOOR"
    )
    top_k: int = Field(default=InvestigationConfig.top_k, ge=1, le=20)


class CliSettings(SettingsGroup):
    # The acting principal's API token (``--token`` and the environment variable win; this also
    # reads it from ``.env``).
    token: SecretStr | None = None


class Settings(BaseModel):
    """Every group, each read from the environment when not given."""

    model_config = ConfigDict(frozen=True)

    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    github: GitHubSettings = Field(default_factory=GitHubSettings)
    gitlab: GitLabSettings = Field(default_factory=GitLabSettings)
    mail: MailSettings = Field(default_factory=MailSettings)
    executor: ExecutorSettings = Field(default_factory=ExecutorSettings)
    pace: PaceConfig = Field(default_factory=PaceConfig)
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    triage: TriageSettings = Field(default_factory=TriageSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    suggestions: SuggestionSettings = Field(default_factory=SuggestionSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    investigation: InvestigationSettings = Field(default_factory=InvestigationSettings)
    cli: CliSettings = Field(default_factory=CliSettings)


def _groups() -> dict[str, type[SettingsGroup]]:
    groups: dict[str, type[SettingsGroup]] = {}
    for name, info in Settings.model_fields.items():
        assert isinstance(info.annotation, type) and issubclass(info.annotation, SettingsGroup)
        groups[name] = info.annotation
    return groups


def env_name(group: type[SettingsGroup], field: str) -> str:
    """The environment variable that sets ``field`` of ``group``."""
    alias = group.model_fields[field].validation_alias
    if isinstance(alias, str):
        return alias
    return f"{group.model_config.get('env_prefix', PREFIX)}{field}".upper()


def env_names() -> dict[str, str]:
    """Every variable -> its place in ``Settings`` (``"RESOLVEFLOW_DATABASE_URL": "database.url"``)."""
    return {
        env_name(group, field): f"{name}.{field}"
        for name, group in _groups().items()
        for field in group.model_fields
    }


def _failed_variable(exc: ValidationError) -> str:
    location = exc.errors()[0]["loc"]
    if not location:  # a check of several fields together (a model validator) names none
        group = next((g for g in _groups().values() if g.__name__ == exc.title), None)
        prefix = group.model_config.get("env_prefix", PREFIX) if group else PREFIX
        return f"{prefix.upper()}*"
    where = str(location[0])
    if where.upper().startswith(PREFIX):  # an aliased field is reported by its variable
        return where.upper()
    group = next((g for g in _groups().values() if g.__name__ == exc.title), None)
    return env_name(group, where) if group else where


def load_settings() -> Settings:
    """The settings, with a ``ConfigError`` naming the variable for an invalid value."""
    try:
        return Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"invalid setting {_failed_variable(exc)}: {first['msg']}") from exc
