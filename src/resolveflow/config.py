"""All configuration, read once from ``RESOLVEFLOW_*`` environment variables (or a ``.env`` file)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from resolveflow.errors import ConfigError

DAY_SECONDS = 86_400


def _default_home() -> Path:
    return Path(platformdirs.user_data_dir("resolveflow", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="RESOLVEFLOW_", env_file=".env", extra="ignore", hide_input_in_errors=True
    )

    home: Path = Field(default_factory=_default_home, description="Embedded database lives here.")
    database_url: SecretStr | None = Field(
        default=None, description="Postgres 15+ with pgvector; unset starts an embedded server."
    )
    db_pool_max_size: int = Field(default=10, ge=1, le=200)
    db_connect_timeout_seconds: float = Field(default=10.0, gt=0)
    db_statement_timeout_ms: int = Field(default=30_000, ge=100)

    github_api_url: str = "https://api.github.com"
    github_token: SecretStr | None = None
    github_timeout_seconds: float = Field(default=10.0, gt=0, le=300)

    token: SecretStr | None = Field(default=None, description="The acting principal's API token.")

    approval_ttl_seconds: int = Field(default=7 * DAY_SECONDS, ge=1)
    lease_seconds: float = Field(default=60.0, gt=0)
    rate_limit_max_waits: int = Field(default=5, ge=0)
    rate_limit_max_wait_seconds: float = Field(default=3600.0, gt=0)
    unavailable_retry_seconds: float = Field(default=30.0, gt=0)
    executor_poll_seconds: float = Field(default=2.0, gt=0)
    reconcile_interval_seconds: float = Field(default=300.0, ge=0)

    # --- triage ------------------------------------------------------------------------------
    policy_file: Path | None = Field(
        default=None, description="Per-repository triage policy (TOML); built-in defaults if unset."
    )
    run_lease_seconds: float = Field(default=300.0, gt=0)

    # --- retrieval (owned by the retrieval work; keep edits inside this block) ---------------
    # Chosen on the dev sets; figures and reasons in docs/retrieval.md.
    embedder: Literal["local", "openai", "fake"] = "local"
    embedding_max_seq_length: int = Field(default=128, ge=16, le=512)
    embedding_quantize: bool = True
    embedding_batch_size: int = Field(default=16, ge=1, le=1024)
    openai_embeddings_base_url: str | None = None
    openai_embeddings_api_key: SecretStr | None = None
    openai_embeddings_model: str = "text-embedding-3-small"
    openai_embeddings_dimensions: int | None = Field(default=None, ge=1, le=2000)
    embedding_timeout_seconds: float = Field(default=30.0, gt=0)
    fusion_method: Literal["rrf", "weighted"] = "weighted"
    fusion_vector_weight: float = Field(default=0.8, ge=0)
    fusion_lexical_weight: float = Field(default=0.2, ge=0)
    fusion_rrf_k: int = Field(default=60, ge=1)
    search_candidates: int = Field(default=30, ge=5, le=1000)
    search_exact_max_chunks: int = Field(default=20_000, ge=0)
    hnsw_ef_search_min: int = Field(default=64, ge=10, le=1000)
    hnsw_ef_search_max: int = Field(default=1000, ge=10, le=1000)
    search_max_terms: int = Field(default=24, ge=1, le=200)
    search_max_term_share: float = Field(default=0.05, gt=0, le=1)
    search_max_postings: int = Field(default=3_000, ge=1)
    label_min_probability: float = Field(default=0.35, ge=0, le=1)
    index_rate_limit_max_waits: int = Field(default=10, ge=0)
    # --- end of retrieval block ---------------------------------------------------------------

    # --- web, webhooks, worker, sign-in (owned by the web work; keep edits inside this block) --
    web_host: str = Field(default="127.0.0.1", description="serve listens here (loopback).")
    web_port: int = Field(default=8000, ge=0, le=65535)
    # The address people reach the web app at; the OAuth redirect URL is built from it.
    web_public_url: str | None = None
    web_session_ttl_seconds: int = Field(default=8 * 3600, ge=60)
    # Secure cookies are sent by browsers to https and to localhost only; plain-http hosts other
    # than localhost need this off (never in production).
    web_cookie_secure: bool = True
    github_web_url: str = "https://github.com"
    github_oauth_client_id: str | None = None
    github_oauth_client_secret: SecretStr | None = None
    github_oauth_scope: str = "public_repo"
    # GitHub login -> "tenant:role,role"; only listed logins may sign in (JSON object).
    web_users: dict[str, str] = Field(default_factory=dict)
    # Fernet key(s), comma-separated, newest first: users' GitHub tokens are encrypted with it.
    token_encryption_key: SecretStr | None = None
    github_webhook_secret: SecretStr | None = None
    webhook_auto_triage: bool = True
    limit_runs_per_day: int = Field(default=100, ge=0)
    limit_webhook_runs_per_day: int = Field(default=1000, ge=0)
    worker_concurrency: int = Field(default=2, ge=1, le=64)
    worker_reconcile_cron: str = "* * * * *"

    @field_validator("github_web_url", "web_public_url")
    @classmethod
    def _web_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/") if value else value

    # --- end of web block ---------------------------------------------------------------------

    # --- model and investigation (owned by the investigation work) ---
    model_provider: Literal["none", "openai", "scripted"] = Field(
        default="none", description="none: the investigation proposes from retrieval alone."
    )
    openai_base_url: str | None = None  # unset: the client's default (api.openai.com)
    openai_api_key: SecretStr | None = None
    model: str = "gpt-4o-mini"
    model_timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    model_max_retries: int = Field(default=2, ge=0, le=10)  # 429 / 5xx / timeouts, per call
    model_max_wait_seconds: float = Field(default=30.0, ge=0)  # a longer Retry-After fails
    model_invalid_output_attempts: int = Field(default=2, ge=1, le=5)
    model_daily_calls_per_principal: int = Field(default=200, ge=0)
    scripted_model_file: Path | None = None  # provider "scripted": a JSON list of answers
    # Calibrated on dev data for the local MiniLM space: docs/review.md.
    relevance_floor: float = Field(default=0.15, ge=0, le=1)
    investigation_top_k: int = Field(default=5, ge=1, le=20)
    # --- end of model block ---

    log_level: str = "WARNING"

    @field_validator("github_api_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @property
    def embedded(self) -> bool:
        return self.database_url is None


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"invalid setting RESOLVEFLOW_{field.upper()}: {first['msg']}") from exc
