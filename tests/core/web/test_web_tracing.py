"""Traces (OpenTelemetry) against the real app, worker jobs, database and sandbox forge, read from
an in-memory exporter: one triage run from its webhook to what it posted, the same trace id
in its audit events and log lines, nothing private in any attribute, and a collector that
refuses or hangs slowing nothing.

OpenTelemetry allows one tracer provider per process, so this module installs it once and stops
it at the end; no other test module turns tracing on.
"""

from __future__ import annotations

import io
import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from fixtures_github import SERVICE_TOKEN
from fixtures_web import WEBHOOK_SECRET, Web, issue_payload
from resolveflow import telemetry
from resolveflow.logging_setup import KeyValueFormatter

pytest_plugins = ["fixtures_web"]


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    assert telemetry.configure_tracing("resolveflow-test", exporter, batch=False)
    yield exporter
    telemetry.stop_tracing()


def run_through_to_the_comment(web: Web) -> str:
    assert web.webhook("issues", issue_payload(1)).status_code == 202
    web.work()  # the delivery queues the run
    web.work()  # the run reaches its pause
    approver = web.api(web.world.approver_token)
    [listed] = web.client.get("/api/v1/runs", headers=approver).json()
    run = web.client.get(f"/api/v1/runs/{listed['run_id']}", headers=approver).json()
    assert run["status"] == "awaiting_approval"
    approve = {"digest": run["digest"]}
    url = f"/api/v1/runs/{run['run_id']}/approve"
    assert web.client.post(url, json=approve, headers=approver).status_code == 202
    web.work()  # the run resumes and the gate writes its action once
    after = web.client.get(f"/api/v1/runs/{run['run_id']}", headers=approver).json()
    assert after["proposal"]["execution"]["state"] == "sent", after["status"]
    assert web.fake.writes_received >= 1
    return str(run["run_id"])


def test_one_run_from_webhook_to_what_it_posted_is_traced(
    web: Web, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    run_id = run_through_to_the_comment(web)
    finished = spans.get_finished_spans()
    names = {span.name for span in finished}
    for expected in (
        "POST /webhooks/github",
        "webhook.receive",
        "job resolveflow.handle_delivery",
        "job resolveflow.start_webhook_run",
        "triage.fetch_evidence",
        "triage.classify",
        "triage.build_proposal",
        "triage.await_approval",
        "retrieval.embed",
        "approval",
        "job resolveflow.resume_run",
        "triage.execute",
        "execution.send",
        "execution.record",
    ):
        assert expected in names, (expected, sorted(names))
    assert any(span.name in {"GET", "POST"} and span.kind.name == "CLIENT" for span in finished)
    # The webhook's trace goes on through the jobs it queued, to the run's steps.
    webhook = next(span for span in finished if span.name == "webhook.receive")
    steps = [span for span in finished if span.name.startswith("triage.fetch")]
    assert steps and all(s.context.trace_id == webhook.context.trace_id for s in steps)
    # An audit event written during the run carries its trace's id.
    with web.db.tenant(web.world.tenant.id) as conn:
        traced = conn.execute(
            "SELECT DISTINCT trace_id FROM audit_events WHERE run_id = %s AND trace_id IS NOT NULL",
            [run_id],
        ).fetchall()
    ids = {f"{span.context.trace_id:032x}" for span in finished}
    assert traced and {row["trace_id"] for row in traced} <= ids


def test_no_attribute_carries_text_a_token_or_a_secret(
    web: Web, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    run_through_to_the_comment(web)
    private = [
        "Widget crashes on start",  # the issue's title and body on the fake GitHub
        "It crashes.",
        SERVICE_TOKEN,
        WEBHOOK_SECRET,
        web.world.approver_token,
        "Bearer",
        "SELECT",  # no SQL text
        "/repos/",  # no URL
    ]
    for span in spans.get_finished_spans():
        shown = dict(span.attributes or {})
        for event in span.events:
            shown.update(event.attributes or {})
        for key, value in shown.items():
            assert telemetry.allowed(key), (span.name, key)
            for secret in private:
                assert secret not in str(value), (span.name, key, value)


def test_every_log_line_in_a_trace_names_it() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(KeyValueFormatter("%(levelname)s %(message)s"))
    handler.addFilter(telemetry.TraceIdFilter())
    log = logging.getLogger("resolveflow.test.tracing")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        log.info("outside")
        with telemetry.span("work"):
            trace_id = telemetry.current_trace_id()
            log.info("inside")
    finally:
        log.removeHandler(handler)
    outside, inside = stream.getvalue().splitlines()
    assert "trace_id" not in outside
    assert trace_id is not None and inside.endswith(f"trace_id={trace_id}")


class HangingCollector:
    """Accepts connections and never answers (a collector that hangs)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.server.close()
        for conn in self.held:
            conn.close()


def refused_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])  # closed again: nothing listens there


@pytest.mark.parametrize("collector", ["refuses", "hangs"])
def test_a_collector_that_refuses_or_hangs_slows_no_request(
    web: Web, spans: InMemorySpanExporter, collector: str
) -> None:
    hanging = HangingCollector() if collector == "hangs" else None
    port = hanging.port if hanging else refused_port()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=2)
    telemetry.configure_tracing("resolveflow-test", exporter)  # batched, as in production
    try:
        took: list[float] = []
        for _ in range(20):
            started = time.perf_counter()
            answer = web.client.get("/healthz")
            took.append(time.perf_counter() - started)
            assert answer.status_code == 200
        assert web.client.get("/readyz").status_code == 200
    finally:
        if hanging:
            hanging.close()
    # Each export waits up to 2 s on that collector (and retries); no request waited for it.
    assert max(took) < 1.0, took
