"""The process's own measurements for ``/metrics`` (Prometheus): what only the process sees as
it happens. Counts that live in the database (runs, executions, model calls, approval waits,
the queue) are read at scrape time by ``web/metrics.py``.

Labels take bounded values only (a phase, a kind of search), never an issue number, a user name
or a tenant: a label with unbounded values is a new time series per value.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

# Seconds: a webhook is acknowledged in milliseconds; GitHub gives up after 10 s.
WEBHOOK_ACK_SECONDS = Histogram(
    "resolveflow_webhook_ack_seconds",
    "From a webhook delivery's arrival to its acknowledgement (this process).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)

RETRIEVAL_SECONDS = Histogram(
    "resolveflow_retrieval_seconds",
    "One search's time by phase: embed (the query's vector) and database (both branches).",
    ["search", "phase"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)

# Notifications (notify/): this process's deliveries by outcome: sent, retry (a failed attempt
# that will be tried again), failed (the last attempt failed; the row is given up on). The
# database's totals across processes are resolveflow_notifications{state} (web/metrics.py).
NOTIFICATION_DELIVERIES = Counter(
    "resolveflow_notification_deliveries",
    "Notification attempts made by this process, by outcome.",
    ["outcome"],
)
