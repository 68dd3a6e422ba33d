"""``/metrics`` against the real app and database: the counts across tenants (executions by
state, approval waits, model calls and tokens, the queue), the process's webhook and retrieval
histograms moving when they happen, bounded labels only, and a scrape that still answers when the
database does not."""

from __future__ import annotations

from typing import Any

import psycopg
from prometheus_client.parser import text_string_to_metric_families

from conftest import make_world, propose_and_approve
from fixtures_web import Web, issue_payload
from resolveflow.domain.vocabulary import ExecutionState, NotificationState, RunStatus
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher

pytest_plugins = ["fixtures_web"]


def scrape(web: Web) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = web.client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def model_call(superuser: psycopg.Connection[Any], tenant_id: Any, outcome: str) -> None:
    error = None if outcome == "ok" else "no answer in time"
    superuser.execute(
        "INSERT INTO model_calls (tenant_id, purpose, provider, model, prompt_tokens,"
        " completion_tokens, latency_ms, attempts, outcome, error)"
        " VALUES (%s, 'diagnosis', 'openai', 'gpt-test', 120, 30, 900, 1, %s, %s)",
        [tenant_id, outcome, error],
    )


def test_counts_across_tenants_in_bounded_labels(
    web: Web, superuser: psycopg.Connection[Any]
) -> None:
    before = scrape(web)
    assert value(before, "resolveflow_database_up") == 1.0
    other = make_world(web.db, tenant="globex", repository="globex/app")
    propose_and_approve(web.db, web.world)
    propose_and_approve(web.db, other, issue=2)
    model_call(superuser, web.world.tenant.id, "ok")
    model_call(superuser, other.tenant.id, "timeout")
    after = scrape(web)
    pending = ("resolveflow_executions", {"state": "pending"})
    assert value(after, pending[0], **pending[1]) - value(before, pending[0], **pending[1]) == 2
    assert value(after, "resolveflow_approval_wait_seconds_count") == 2
    assert value(after, "resolveflow_approval_wait_seconds_bucket", le="60.0") == 2
    assert value(after, "resolveflow_approval_wait_seconds_bucket", le="+Inf") == 2
    assert value(after, "resolveflow_model_calls_total", provider="openai", outcome="ok") == 1
    assert value(after, "resolveflow_model_calls_total", provider="openai", outcome="timeout") == 1
    assert value(after, "resolveflow_model_tokens_total", provider="openai", kind="prompt") == 240
    assert value(after, "resolveflow_queue_jobs_waiting") >= 0
    # Every label value is a bounded word: no repository, issue, user or tenant.
    allowed = {
        "state": {str(s) for s in ExecutionState} | {str(s) for s in NotificationState},
        "status": {str(s) for s in RunStatus},
        "provider": {"openai"},
        "outcome": {"ok", "timeout"} | {"sent", "retry", "failed"},  # model calls, notifications
        "kind": {"prompt", "completion"},
        "search": {"hybrid"},
        "phase": {"embed", "database"},
    }
    for (name, labels), _ in after.items():
        if not name.startswith("resolveflow_"):
            continue  # the client library's process and GC series
        for label, shown in labels:
            if label == "le":
                continue
            assert shown in allowed[label], (name, label, shown)
    text = web.client.get("/metrics").text
    for private in ("acme", "globex", "rita", "alex", "widgets"):
        assert private not in text


def test_webhook_and_retrieval_histograms_move_when_they_happen(web: Web) -> None:
    before = scrape(web)
    assert web.webhook("issues", issue_payload(1)).status_code == 202
    Indexer(web.db, web.app.embedder()).upsert(
        web.world.tenant.id,
        [SourceDocument("github:acme/widgets", "1", "issue", "Crash on start", "It crashes.")],
    )
    Searcher(web.db, web.app.embedder()).search(web.world.tenant.id, "crash")
    after = scrape(web)
    acks = "resolveflow_webhook_ack_seconds_count"
    assert value(after, acks) - value(before, acks) == 1
    searches = "resolveflow_retrieval_seconds_count"
    for phase in ("embed", "database"):
        moved = value(after, searches, search="hybrid", phase=phase) - value(
            before, searches, search="hybrid", phase=phase
        )
        assert moved == 1, phase


def test_a_scrape_answers_when_the_database_does_not(web: Web, pg_server: Any) -> None:
    with psycopg.connect(web.db.url) as probe:
        (name,) = probe.execute("SELECT current_database()").fetchone() or ("",)
    root = psycopg.connect(pg_server.get_uri(), autocommit=True)
    try:
        root.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        root.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name]
        )
        samples = scrape(web)
    finally:
        root.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        root.close()
    assert value(samples, "resolveflow_database_up") == 0.0
    assert ("resolveflow_webhook_ack_seconds_count", ()) in samples
    assert not any(name.startswith("resolveflow_executions") for name, _ in samples)
