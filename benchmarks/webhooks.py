"""How fast a webhook delivery is acknowledged, at 20 deliveries in flight, on the embedded Postgres.

    python benchmarks/webhooks.py --n 2000 --concurrency 20 --rounds 3

The real server (uvicorn on 127.0.0.1, one process, as ``resolveflow serve``) receives signed
``issues`` deliveries shaped like GitHub's (about 8 KB): three in four are new events, acted on
(delivery row, event claim and job in one transaction), one in four a replay of an earlier one
(recorded as ignored). Each client thread keeps its connection open, like GitHub's senders. The
latency is from sending the request to reading the whole answer, measured in the client, so it
includes the client's own share of the two cores. Prints p50/p95/p99/max per round next to the
target (p99 under 1 s), and the server's share (verify, parse, record) to tell it from queueing.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import hmac
import json
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from resolveflow.accounts import admin
from resolveflow.bootstrap.app import open_app
from resolveflow.config import DatabaseSettings, Settings, WebhookSettings
from resolveflow.store.queue import setup_queue
from resolveflow.triage import webhooks
from resolveflow.web.server import ServerThread

SECRET = "benchmark-secret"
REPO = "bench/webhooks"
TARGET_P99_SECONDS = 1.0


def payload(number: int, at: datetime) -> bytes:
    """An ``issues.opened`` delivery with the size and shape of GitHub's (user and repository
    objects with their URLs, a body of a few KB)."""
    user = {"login": "octocat", "id": 1, "type": "User", "site_admin": False}
    user.update({f"{k}_url": f"https://api.github.com/users/octocat/{k}" for k in "abcdefghij"})
    repository = {"full_name": REPO, "id": 7, "private": False, "owner": user}
    repository.update(
        {f"{k}_url": f"https://api.github.com/repos/{REPO}/{k}" for k in "abcdefghijklmn"}
    )
    issue = {
        "number": number,
        "title": f"Crash when loading dataset {number}",
        "body": "Steps to reproduce:\n" + "1. load the dataset with streaming=True\n" * 80,
        "user": user,
        "labels": [],
        "state": "open",
        "created_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "updated_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return json.dumps(
        {"action": "opened", "issue": issue, "repository": repository, "sender": user}
    ).encode()


def deliveries(n: int, start: int) -> list[bytes]:
    now = datetime.now(UTC)
    fresh = [payload(start + i, now + timedelta(seconds=i)) for i in range(n - n // 4)]
    return fresh + fresh[: n // 4]  # the last quarter: replays under fresh delivery ids


class ServerShare:
    """Times ``triage.webhooks.accept`` (verify, parse, record: the work on the server's worker
    thread), to tell the server's share of a slow answer from queueing and the client's."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._accept = webhooks.accept
        webhooks.accept = self._timed  # type: ignore[assignment]  # read at call time by web/

    def _timed(self, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return self._accept(*args, **kwargs)
        finally:
            self.samples.append(time.perf_counter() - began)

    def take(self) -> list[float]:
        taken, self.samples = self.samples, []
        return taken


def run_round(
    url: str, bodies: list[bytes], concurrency: int
) -> tuple[list[float], dict[int, int]]:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    local = threading.local()

    def send(body: bytes) -> None:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=url, timeout=30)
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": signature,
            "Content-Type": "application/json",
        }
        began = time.perf_counter()
        response = client.post("/webhooks/github", content=body, headers=headers)
        elapsed = time.perf_counter() - began
        with lock:
            latencies.append(elapsed)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(send, bodies))
    return latencies, statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="deliveries per round")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="rf-bench-webhooks-"))
    # Registered before the embedded Postgres starts, so it runs after pgserver's own exit handler
    # has stopped the server (atexit runs last-in, first-out): never delete a running server's data.
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    settings = Settings(
        database=DatabaseSettings(home=home),
        webhooks=WebhookSettings(secret=SECRET, auto_triage=True),
    )
    with open_app(settings) as app:
        with app.db.owner_connection() as conn:
            setup_queue(conn)
        admin.add_tenant(app.db, "bench")
        admin.add_repository(app.db, "bench", REPO)
        with ServerThread(app) as server:
            print(f"{args.rounds} rounds of {args.n} deliveries, {args.concurrency} in flight")
            p99s = []
            share = ServerShare()
            for index in range(args.rounds):
                bodies = deliveries(args.n, index * args.n + 1)
                began = time.perf_counter()
                latencies, statuses = run_round(server.url, bodies, args.concurrency)
                wall = time.perf_counter() - began
                cuts = statistics.quantiles(latencies, n=100)
                p99s.append(cuts[98])
                print(
                    f"  round {index + 1}: p50 {cuts[49] * 1000:6.1f} ms  p95 {cuts[94] * 1000:6.1f} ms"
                    f"  p99 {cuts[98] * 1000:6.1f} ms  max {max(latencies) * 1000:6.1f} ms"
                    f"  ({len(latencies) / wall:.0f}/s; statuses {statuses})"
                )
                inner = statistics.quantiles(share.take(), n=100)
                print(
                    f"    server share (verify, parse, record): p50 {inner[49] * 1000:6.1f} ms"
                    f"  p99 {inner[98] * 1000:6.1f} ms"
                )
            worst = max(p99s)
            verdict = "met" if worst < TARGET_P99_SECONDS else "NOT met"
            print(
                f"target: p99 < {TARGET_P99_SECONDS * 1000:.0f} ms;"
                f" worst round p99 {worst * 1000:.1f} ms: {verdict}"
            )


if __name__ == "__main__":
    main()
