"""Traces (OpenTelemetry), off unless configured by the standard ``OTEL_*`` variables.

Tracing is on when ``OTEL_TRACES_EXPORTER`` names ``otlp`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (and ``OTEL_SDK_DISABLED`` is not true). Spans are
exported in the background (a batch processor with the exporter's own timeout), so a collector
that refuses or hangs never slows or fails a request: spans are dropped instead.

Nothing private becomes an attribute: every span goes through ``AllowlistExporter``, which keeps
only the attribute keys in ``ALLOWED`` (and ``resolveflow.*`` keys our own code sets, which
carry ids, kinds, states and counts, never text) and drops event attributes but the exception
type. No URL, query string, SQL text, header, issue or email text, token or secret is exported.

Any layer may import this module (like ``errors.py`` and ``metrics.py``): it needs only the
OpenTelemetry API, which does nothing until ``configure_tracing`` installs the SDK.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger(__name__)
tracer = trace.get_tracer("resolveflow")

AttributeValue = str | bool | int | float
ALLOWED = frozenset(
    {
        # HTTP, server and client (the route template, never the URL or its query)
        "http.request.method",
        "http.method",
        "http.route",
        "http.response.status_code",
        "http.status_code",
        "url.scheme",
        "server.address",
        "server.port",
        "network.protocol.version",
        # the database: which system and operation, never the statement
        "db.system",
        "db.system.name",
        "db.operation.name",
        # a model call (GenAI semantic conventions)
        "gen_ai.operation.name",
        "gen_ai.system",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "error.type",
        "exception.type",
    }
)
OWN_PREFIX = "resolveflow."
_ENABLED = False


def allowed(key: str) -> bool:
    return key in ALLOWED or key.startswith(OWN_PREFIX)


def keep(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: value for key, value in (attributes or {}).items() if allowed(key)}


@contextmanager
def span(name: str, **attributes: AttributeValue | None) -> Iterator[trace.Span]:
    """A span named ``name`` around the block; ``attributes`` are our own (``resolveflow.`` is
    prefixed), ids, kinds, states and counts only; ``None`` values are left out."""
    shown = {f"{OWN_PREFIX}{key}": value for key, value in attributes.items() if value is not None}
    with tracer.start_as_current_span(name, attributes=shown) as current:
        yield current


@contextmanager
def model_span(provider: str, model: str) -> Iterator[trace.Span]:
    """A model call, with the GenAI semantic-convention attributes (never the prompt or the
    answer: those are issue text)."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,
        "gen_ai.request.model": model,
    }
    with tracer.start_as_current_span(f"chat {model}", attributes=attributes) as current:
        yield current


def record_usage(
    current: trace.Span,
    served_model: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
) -> None:
    if served_model:
        current.set_attribute("gen_ai.response.model", served_model)
    if input_tokens is not None:
        current.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    if output_tokens is not None:
        current.set_attribute("gen_ai.usage.output_tokens", output_tokens)


def current_trace_id() -> str | None:
    """The active trace's id (32 hex digits), or None outside a recorded trace."""
    context = trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid else None


def carrier() -> dict[str, str]:
    """The active context as W3C ``traceparent`` headers, to hand to a queued job."""
    headers: dict[str, str] = {}
    propagate.inject(headers)
    return headers


@contextmanager
def continued(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Run the block in the context a ``carrier()`` captured (a job continues its request's
    trace); with nothing captured, the block starts its own."""
    if not headers:
        yield
        return
    token = otel_context.attach(propagate.extract(dict(headers)))
    try:
        yield
    finally:
        otel_context.detach(token)


class TraceIdFilter(logging.Filter):
    """Puts the active trace id on every log record (``trace_id=...``), so a person can go from
    a log line to its trace."""

    def filter(self, record: logging.LogRecord) -> bool:
        trace_id = current_trace_id()
        if trace_id is not None and not hasattr(record, "trace_id"):
            record.trace_id = trace_id
        return True


def enabled_by_environment(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters == "none":
        return False
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    return bool(endpoint) or "otlp" in exporters


def configure_tracing(
    service_name: str, exporter: SpanExporter | None = None, *, batch: bool = True
) -> bool:
    """Send spans to ``exporter`` (tests: an in-memory one), or to the OTLP/HTTP exporter the
    ``OTEL_*`` variables configure; False when tracing stays off. The SDK's provider is set once
    per process (OpenTelemetry allows no other); a later call adds its exporter to it."""
    global _ENABLED  # noqa: PLW0603 - one tracer provider per process
    if exporter is None and not enabled_by_environment():
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()  # endpoint, headers and timeout from OTEL_EXPORTER_OTLP_*
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        trace.set_tracer_provider(provider)
    filtered = cast("SpanExporter", AllowlistExporter(exporter))
    provider.add_span_processor(
        BatchSpanProcessor(filtered) if batch else SimpleSpanProcessor(filtered)
    )
    if not _ENABLED:
        _instrument_clients()
        _ENABLED = True
    logger.info("tracing on", extra={"service": service_name})
    return True


def stop_tracing() -> None:
    """Flush and stop every exporter and take the client instrumentation off (tests; a process
    that exits does the flush by itself)."""
    global _ENABLED  # noqa: PLW0603 - see configure_tracing
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.requests import RequestsInstrumentor
    from opentelemetry.sdk.trace import TracerProvider

    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.shutdown()
    if _ENABLED:
        HTTPXClientInstrumentor().uninstrument()
        RequestsInstrumentor().uninstrument()
        PsycopgInstrumentor().uninstrument()
    _ENABLED = False


def tracing_enabled() -> bool:
    return _ENABLED


def _instrument_clients() -> None:
    # Outgoing HTTP (githubkit, the OpenAI client: httpx; python-gitlab: requests) and every
    # database statement (psycopg). Their spans pass the same allowlist.
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.requests import RequestsInstrumentor

    HTTPXClientInstrumentor().instrument()
    RequestsInstrumentor().instrument()
    PsycopgInstrumentor().instrument(enable_commenter=False, skip_dep_check=True)


def instrument_web(app: Any) -> None:
    """Server spans for every request of the FastAPI app, when tracing is on."""
    if not _ENABLED:
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app, exclude_spans=["receive", "send"])


class AllowlistExporter:
    """Wraps the real exporter: each span leaves with its allowed attributes only. (A
    ``SpanExporter`` by shape; subclassing it would import the SDK with this module.)"""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([_filtered(s) for s in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


def _filtered(original: ReadableSpan) -> ReadableSpan:
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Status

    events = []
    for event in original.events:  # an exception's message may quote input: its type only
        kind = (event.attributes or {}).get("exception.type")
        events.append(Event(event.name, {"exception.type": kind} if kind else {}, event.timestamp))
    return ReadableSpan(
        name=original.name,
        context=original.context,
        parent=original.parent,
        resource=original.resource,
        attributes=keep(original.attributes),
        events=events,
        links=original.links,
        kind=original.kind,
        status=Status(original.status.status_code),  # its description may quote input
        start_time=original.start_time,
        end_time=original.end_time,
        instrumentation_scope=original.instrumentation_scope,
    )
