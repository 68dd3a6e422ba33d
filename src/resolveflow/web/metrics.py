"""``GET /metrics`` in the Prometheus text format: the process's own histograms
(``resolveflow.metrics``: webhook acknowledgement, retrieval latency) and, read from the
database at scrape time, counts across every tenant: runs by status, executions by state, model
calls and tokens, the wait from a proposal version to its approval, the job queue's depth and
age, notifications by state and their retries. Labels are bounded words only
(docs/operations.md lists every series).

A database that does not answer leaves ``resolveflow_database_up 0`` and the process's own
series: a scrape never fails because of it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from resolveflow.domain.vocabulary import ExecutionState, NotificationState, RunStatus
from resolveflow.errors import ResolveFlowError
from resolveflow.notify.store import notifications as notification_store
from resolveflow.store import health as health_store
from resolveflow.store import metrics as metrics_store
from resolveflow.store.database import Database
from resolveflow.web.security import wired

logger = logging.getLogger(__name__)
router = APIRouter(tags=["health"])
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class DatabaseCollector(Collector):
    def __init__(self, db: Database) -> None:
        self.db = db

    def collect(self) -> Iterator[Metric]:
        try:
            with self.db.unscoped() as conn:
                counts = metrics_store.metric_counts(conn)
                backlog = health_store.queue_backlog(conn)
                notices = notification_store.counts(conn)
        except ResolveFlowError as exc:
            logger.warning("metrics: the database did not answer", extra={"error": exc.message})
            yield GaugeMetricFamily(
                "resolveflow_database_up", "The database answered this scrape.", value=0
            )
            return
        yield GaugeMetricFamily(
            "resolveflow_database_up", "The database answered this scrape.", value=1
        )
        yield _by_label(
            "resolveflow_runs", "Runs by status.", "status", counts.get("runs", {}), RunStatus
        )
        yield _by_label(
            "resolveflow_executions",
            "Executions by state.",
            "state",
            counts.get("executions", {}),
            ExecutionState,
        )
        yield from _model_calls(counts)
        yield _approval_wait(counts)
        yield GaugeMetricFamily(
            "resolveflow_queue_jobs_waiting", "Jobs ready to run.", value=backlog.waiting
        )
        yield GaugeMetricFamily(
            "resolveflow_queue_oldest_job_age_seconds",
            "How long the oldest job ready to run has waited.",
            value=backlog.oldest_seconds,
        )
        yield from _notifications(notices)


def _by_label(
    name: str,
    documentation: str,
    label: str,
    values: dict[str, float],
    words: type[RunStatus] | type[ExecutionState] | type[NotificationState],
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for member in words:  # every value, zeros included: a series does not vanish
        family.add_metric([str(member)], values.get(str(member), 0.0))
    return family


def _notifications(rows: list[notification_store.StateCount]) -> Iterator[Metric]:
    states: dict[str, float] = {}
    for row in rows:
        states[row.state.value] = states.get(row.state.value, 0.0) + row.notifications
    yield _by_label(
        "resolveflow_notifications",
        "Notifications about waiting proposals by state (sent, pending, failed: given up on).",
        "state",
        states,
        NotificationState,
    )
    yield GaugeMetricFamily(
        "resolveflow_notifications_retrying",
        "Notifications that failed at least once and will be tried again.",
        value=sum(row.retrying for row in rows),
    )
    yield CounterMetricFamily(
        "resolveflow_notification_retries",
        "Notification attempts after each one's first, every process's.",
        value=sum(row.retries for row in rows),
    )


def _model_calls(counts: dict[str, dict[str, float]]) -> Iterator[Metric]:
    calls = CounterMetricFamily(
        "resolveflow_model_calls",
        "Model calls by provider and outcome.",
        labels=["provider", "outcome"],
    )
    for key, value in sorted(counts.get("model_calls", {}).items()):
        provider, _, outcome = key.partition("/")
        calls.add_metric([provider, outcome], value)
    yield calls
    tokens = CounterMetricFamily(
        "resolveflow_model_tokens",
        "Model tokens by provider and kind.",
        labels=["provider", "kind"],
    )
    for key, value in sorted(counts.get("model_tokens", {}).items()):
        provider, _, kind = key.partition("/")
        tokens.add_metric([provider, kind], value)
    yield tokens


def _approval_wait(counts: dict[str, dict[str, float]]) -> HistogramMetricFamily:
    buckets = sorted(counts.get("approval_wait_bucket", {}).items(), key=lambda kv: float(kv[0]))
    total = counts.get("approval_wait_count", {}).get("", 0.0)
    return HistogramMetricFamily(
        "resolveflow_approval_wait_seconds",
        "From a proposal version's creation to its approval.",
        buckets=[(str(float(bound)), value) for bound, value in buckets] + [("+Inf", total)],
        sum_value=counts.get("approval_wait_sum", {}).get("", 0.0),
    )


def _registry(request: Request) -> CollectorRegistry:
    state = request.app.state
    if getattr(state, "metrics_registry", None) is None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(DatabaseCollector(wired(request).db))
        state.metrics_registry = registry
    found: CollectorRegistry = state.metrics_registry
    return found


@router.get("/metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    """Prometheus text format: this process's histograms, then the database's counts."""
    registry = _registry(request)
    text = await run_in_threadpool(lambda: generate_latest(REGISTRY) + generate_latest(registry))
    return Response(text, media_type=CONTENT_TYPE)
