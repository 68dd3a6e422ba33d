"""The settings of the outside systems ResolveFlow talks to: Postgres, GitHub, GitLab, mail
(sending, the Sent-folder search and reading mail in), the embedder and the model; and the group
base every settings class shares. ``config`` gathers them with the product's own groups.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from resolveflow.llm.protocol import Purpose
from resolveflow.mail.bounds import MailBounds

PREFIX = "RESOLVEFLOW_"
DAY_SECONDS = 86_400


def _default_home() -> Path:
    return Path(platformdirs.user_data_dir("resolveflow", appauthor=False))


def http_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value.rstrip("/") if value else value


class SettingsGroup(BaseSettings):
    """One group of settings; subclasses set ``env_prefix``. ``validate_by_name`` lets code and
    tests pass aliased fields by their field name."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX,
        env_file=".env",
        extra="ignore",
        # VAR= means unset, as `${VAR:-}` in a compose file or an exported empty variable do:
        # an empty secret or URL is never a value.
        env_ignore_empty=True,
        hide_input_in_errors=True,
        validate_by_name=True,
        frozen=True,
    )


class DatabaseSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}DB_")

    # The embedded Postgres keeps its data here.
    home: Path = Field(default_factory=_default_home, validation_alias="RESOLVEFLOW_HOME")
    # Postgres 15+ with pgvector; unset starts the embedded server.
    url: SecretStr | None = Field(default=None, validation_alias="RESOLVEFLOW_DATABASE_URL")
    pool_max_size: int = Field(default=10, ge=1, le=200)
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    statement_timeout_ms: int = Field(default=30_000, ge=100)
    # A lost connection is tried again for this long (after 1 s, then doubling: psycopg_pool's
    # backoff), then left until a request needs one: after an outage the database is tried again
    # within seconds of its return, and not at all while nothing asks (store/database.py).
    reconnect_seconds: float = Field(default=5.0, ge=1, le=300)


class GitHubSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}GITHUB_")

    api_url: str = "https://api.github.com"
    web_url: str = "https://github.com"  # the OAuth pages
    token: SecretStr | None = None  # the service token
    timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    oauth_client_id: str | None = None
    oauth_client_secret: SecretStr | None = None
    oauth_scope: str = "public_repo"
    # A GitHub App (docs/github-app.md): its id and private key file, when it was not created
    # with the manifest (whose callback stores both, encrypted, in the database); and its
    # webhook secret. With an App, writes without an approver's token use installation tokens.
    app_id: int | None = Field(default=None, gt=0)
    app_private_key_file: str | None = None
    app_webhook_secret: SecretStr | None = None

    @field_validator("api_url", "web_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return http_url(value) or value


class GitLabSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}GITLAB_")

    url: str | None = None  # unset: no GitLab; each tenant's token is stored (gitlab token set)
    timeout_seconds: float = Field(default=10.0, gt=0, le=300)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return http_url(value) or None


class MailSettings(SettingsGroup):
    """Sending from a tenant's mailboxes (where to: the policy file) and reading mail in
    (docs/email.md)."""

    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}MAIL_")

    timeout_seconds: float = Field(default=30.0, gt=0, le=300)  # each SMTP reply
    deadline_seconds: float = Field(default=120.0, gt=0, le=900)  # one whole SMTP connection
    retries: int = Field(default=2, ge=0, le=5)  # a 4xx before DATA: new connections after it
    retry_delay_seconds: float = Field(default=10.0, ge=0, le=300)
    ca_file: str | None = None  # a CA bundle to trust instead of the system's
    imap_timeout_seconds: float = Field(default=30.0, gt=0, le=300)  # reconciliation's search
    # Reading mail (mail import, mail draft, POST /api/v1/mail/drafts): checked before the stdlib
    # parser interprets a header (mail/bounds.py); over one, a message is unreadable.
    message_max_bytes: int = Field(default=MailBounds.message_max_bytes, ge=1024, le=200 << 20)
    max_headers: int = Field(default=MailBounds.max_headers, ge=10, le=10_000)
    max_header_bytes: int = Field(default=MailBounds.max_header_bytes, ge=998, le=1 << 20)
    max_encoded_words: int = Field(default=MailBounds.max_encoded_words, ge=1, le=5_000)
    max_header_parse_bytes: int = Field(MailBounds.max_header_parse_bytes, ge=4096, le=16 << 20)
    mime_max_depth: int = Field(default=MailBounds.mime_max_depth, ge=1, le=200)
    mime_max_parts: int = Field(default=MailBounds.mime_max_parts, ge=1, le=10_000)
    html_timeout_seconds: float = Field(default=MailBounds.html_timeout_seconds, gt=0, le=300)

    def bounds(self) -> MailBounds:
        return MailBounds(**self.model_dump(include={f.name for f in fields(MailBounds)}))


class EmbeddingSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}EMBEDDING_")

    provider: Literal["local", "local-torch", "openai", "fake"] = Field(
        default="local", validation_alias="RESOLVEFLOW_EMBEDDER"
    )
    # The local model: chosen on the dev sets; figures and reasons in docs/retrieval.md.
    max_seq_length: int = Field(default=128, ge=16, le=512)
    quantize: bool = True  # local-torch only: the ONNX model is int8 as shipped
    threads: int | None = Field(default=None, ge=1, le=256)  # local: unset = this process's cores
    # local-torch with quantize off only: int8 models embed one text per run (docs/retrieval.md)
    batch_size: int = Field(default=16, ge=1, le=1024)
    timeout_seconds: float = Field(default=30.0, gt=0)
    # local: Ask re-reads its first pages for a short question with a cross-encoder shipped in
    # the package (docs/ask.md, "Re-ranking"); none: the ranking alone.
    reranker: Literal["local", "none"] = Field(
        default="local", validation_alias="RESOLVEFLOW_RERANKER"
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias="RESOLVEFLOW_OPENAI_EMBEDDINGS_BASE_URL"
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias="RESOLVEFLOW_OPENAI_EMBEDDINGS_API_KEY"
    )
    openai_model: str = Field(
        default="text-embedding-3-small", validation_alias="RESOLVEFLOW_OPENAI_EMBEDDINGS_MODEL"
    )
    openai_dimensions: int | None = Field(
        default=None, ge=1, le=2000, validation_alias="RESOLVEFLOW_OPENAI_EMBEDDINGS_DIMENSIONS"
    )


class ModelSettings(SettingsGroup):
    model_config = SettingsConfigDict(env_prefix=f"{PREFIX}MODEL_")

    # none: retrieval alone proposes; llamacpp: a llama.cpp server this process starts on
    # loopback for RESOLVEFLOW_MODEL_GGUF (extra local-llm).
    provider: Literal["none", "openai", "scripted", "llamacpp"] = "none"
    gguf: Path | None = None
    threads: int | None = Field(default=None, ge=1, le=256)  # llamacpp; unset: usable CPUs
    context_tokens: int = Field(default=4096, ge=512, le=131072)  # llamacpp's context
    start_seconds: float = Field(default=120.0, gt=0, le=1800)  # llamacpp: loading the model
    name: str = Field(default="gpt-4o-mini", validation_alias="RESOLVEFLOW_MODEL")
    timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    max_retries: int = Field(default=2, ge=0, le=10)  # 429 / 5xx / timeouts, per call
    max_wait_seconds: float = Field(default=30.0, ge=0)  # a longer Retry-After fails the call
    invalid_output_attempts: int = Field(default=2, ge=1, le=5)
    # The whole call: its retries, waits and re-asks for invalid output included (issue 30).
    deadline_seconds: float = Field(default=120.0, gt=0, le=1800)
    # Output tokens per purpose, over the defaults (llm/protocol.py OUTPUT_TOKENS), as JSON:
    # RESOLVEFLOW_MODEL_MAX_TOKENS='{"diagnosis": 1200}'.
    max_tokens: dict[Purpose, Annotated[int, Field(ge=16, le=32768)]] = Field(default_factory=dict)
    # Send the schema's length and count limits (a grammar-based server enforces them); off for
    # a server whose strict mode refuses them. Our own validation checks them either way.
    schema_limits: bool = True
    # Unset: the client's default (api.openai.com).
    openai_base_url: str | None = Field(
        default=None, validation_alias="RESOLVEFLOW_OPENAI_BASE_URL"
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias="RESOLVEFLOW_OPENAI_API_KEY"
    )
    # Provider "scripted": a JSON list of answers.
    scripted_file: Path | None = Field(
        default=None, validation_alias="RESOLVEFLOW_SCRIPTED_MODEL_FILE"
    )
