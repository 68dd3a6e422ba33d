"""The counts ``/metrics`` reports, across tenants, in one round trip (``rf_metric_counts``)."""

from __future__ import annotations

from collections import defaultdict

from resolveflow.store.database import Connection
from resolveflow.store.queries import q


def metric_counts(conn: Connection) -> dict[str, dict[str, float]]:
    """metric -> label -> value, every tenant added up."""
    counts: dict[str, dict[str, float]] = defaultdict(dict)
    for row in conn.execute(q("metrics", "metric_counts")):
        labels = counts[row["metric"]]
        labels[row["label"]] = labels.get(row["label"], 0.0) + float(row["value"])
    return dict(counts)
