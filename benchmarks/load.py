"""Load (and chaos) against 2 web processes and 4 workers on one Postgres, loopback only.

    python benchmarks/load.py --issues 500 --redeliver 0.1
    python benchmarks/load.py --issues 500 --redeliver 0.1 --chaos --seed 7

Setup: the embedded Postgres (or RESOLVEFLOW_DATABASE_URL, which must then be a superuser URL of a
throwaway database: the script reads every tenant's rows and, with --chaos, ends backends), the
sandbox forge (``FakeGitHubServer``) on 127.0.0.1 seeded with ``--issues`` issues (odd numbers a
pull request with a failing check, even ones a bug report), a tenant allowing the repository, a
maintainer with an API token, the webhook secret; then ``resolveflow serve`` x2 and
``resolveflow worker`` x4 as subprocesses. Write pacing is off (RESOLVEFLOW_PACE_ENABLED=false):
the fake forge has no limits, and the pace is tested on its own (tests/integration/
test_gate_pace.py); paced, 500 writes would take over an hour by design. The executor's lease is
10 s (GitHub timeout 2 s, the 5x rule) and a run's lease 30 s, so the chaos run converges in
minutes.

Flow: one signed ``issues``/``opened`` delivery per issue, round-robin over the web processes,
plus ``--redeliver`` of them sent again with the same X-GitHub-Delivery id, from 4 client
threads; a delivery whose connection fails, or that gets a 5xx, is sent again (to the other
process, as a load balancer would) like GitHub's redelivery. Then every run awaiting approval is
approved through the API (GET the run page, POST its digest) from 4 threads, until every
execution is settled or the bound (--converge-seconds) passes.

Measures: webhook acknowledgement p50/p95/p99 (client side, first tries), runs/s (first delivery
to the last run paused), approvals/s, approval -> posted p50/p95 (approval's decided_at to its first
write the forge acknowledged, from the database), duplicates on the forge (comments carrying
one execution's marker beyond the first: target 0), runs per issue beyond one (target 0),
executions by state, forge writes applied vs executions sent; with --chaos the kills done,
backends ended, runs by final status, executions still ``sending`` past their lease (target 0),
and why an issue has no run or a run is stuck. ``--kills`` (3) of each kind happen at seeded
moments within ``--chaos-window`` seconds (90) of the first delivery.

Runtime on a shared 2-core machine at 500 issues: about 1-1.5 minutes without chaos; with chaos
2 minutes when everything converges, else the bound (--converge-seconds, default 300) on top.
The client threads share this process with the fake forge, so the figures include its share.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import hmac
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_chaos import (
    COMMENTS_DUE,
    DIAGNOSIS,
    FAILED,
    POSTED,
    Chaos,
    Fleet,
    Snapshot,
    snapshot,
    wait_paused,
)

from resolveflow.accounts import admin
from resolveflow.bootstrap.app import migrate
from resolveflow.domain.records import Role
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url
from resolveflow.store.queue import setup_queue

REPO = "bench/load"
SECRET = "load-benchmark-secret"
TOKEN = "load-service-token"
BODY = (
    "## Describe the bug\nLoading fails with streaming.\n\n## Steps to reproduce\n"
    "1. pip install datasets==2.14.0\n2. run\n\n```python\nload_dataset('c4', streaming=True)\n```\n"
)
CLIENT_THREADS = 4
RETRY_SECONDS = 60.0  # how long a client keeps redelivering one delivery (GitHub: by hand, days)


def seed_forge(fake: FakeGitHubServer, n: int) -> None:
    fake.add_repo(REPO, ["bug", "ci-failure", "needs-triage"])
    fake.register_token(TOKEN, "resolveflow-bot")
    for number in range(1, n + 1):
        if number % 2:
            sha = f"{number:040x}"
            fake.add_pull_request(REPO, number, f"Fix {number}", BODY, head_sha=sha)
            fake.add_check_run(REPO, sha, "tests", conclusion="failure")
        else:
            fake.add_issue(REPO, number, f"Crash when loading dataset {number}", BODY)


def delivery(number: int) -> tuple[str, bytes]:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    issue = {"number": number, "title": f"Issue {number}", "updated_at": stamp}
    body = {"action": "opened", "issue": issue, "repository": {"full_name": REPO}}
    body["sender"] = {"login": "octocat"}
    return uuid.uuid4().hex, json.dumps(body).encode()


def schedule(n: int, share: float, rng: random.Random) -> list[tuple[int, str, bytes]]:
    """(web index, delivery id, body): every issue once, then ``share`` of them again with the
    same id, each re-sent at least 20 places after its first sending."""
    sends = [(i % 2, *delivery(i + 1)) for i in range(n)]
    for original in rng.sample(range(n), int(n * share)):
        _, delivery_id, body = sends[original]
        at = rng.randint(min(original + 20, len(sends)), len(sends))
        sends.insert(at, (rng.randrange(2), delivery_id, body))
    return sends


class Clients:
    """The client threads' HTTP side: one keep-alive client per thread and web process, retries
    on a failed connection or a 5xx (the other web process first), the latencies."""

    def __init__(self, urls: list[str], token: str) -> None:
        self.urls = urls
        self.token = token
        self.local = threading.local()
        self.lock = threading.Lock()
        self.acks: list[float] = []
        self.statuses: dict[str, int] = {}
        self.retries = 0
        self.refused: dict[str, str] = {}  # run id -> the last 4xx answer to its approval

    def client(self, index: int) -> httpx.Client:
        clients = getattr(self.local, "clients", None)
        if clients is None:
            clients = self.local.clients = [httpx.Client(base_url=u, timeout=30) for u in self.urls]
        return clients[index % len(clients)]

    def count(self, key: str) -> None:
        with self.lock:
            self.statuses[key] = self.statuses.get(key, 0) + 1

    def send(self, index: int, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        deadline = time.monotonic() + RETRY_SECONDS
        tries = 0
        while True:
            began = time.perf_counter()
            try:
                response = self.client(index + tries).request(method, path, **kwargs)
                if response.status_code < 500:
                    if tries == 0 and path.startswith("/webhooks"):
                        with self.lock:
                            self.acks.append(time.perf_counter() - began)
                    return response
                self.count(f"{method} {response.status_code} (retried)")
            except httpx.TransportError as exc:
                self.count(f"{method} {type(exc).__name__} (retried)")
            tries += 1
            with self.lock:
                self.retries += 1
            if time.monotonic() > deadline:
                self.count(f"{method} gave up")
                return None
            time.sleep(min(2.0, 0.2 * tries))

    def deliver(self, item: tuple[int, str, bytes]) -> None:
        index, delivery_id, body = item
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": delivery_id,
            "X-Hub-Signature-256": signature,
            "Content-Type": "application/json",
        }
        response = self.send(index, "POST", "/webhooks/github", content=body, headers=headers)
        if response is not None:
            self.count(f"webhook {response.status_code}")

    def approve(self, item: tuple[int, str]) -> None:
        """Approve the digest the run's page shows; a 409 after a retried POST is an approval
        that was recorded before the connection failed."""
        index, run_id = item
        auth = {"Authorization": f"Bearer {self.token}"}
        page = self.send(index, "GET", f"/api/v1/runs/{run_id}", headers=auth)
        if page is None or page.status_code != 200 or not page.json().get("digest"):
            self.count("run page unusable")
            return
        digest = page.json()["digest"]
        path = f"/api/v1/runs/{run_id}/approve"
        decided = self.send(index, "POST", path, json={"digest": digest}, headers=auth)
        if decided is not None:
            self.count(f"approve {decided.status_code}")
            if decided.status_code >= 400:
                with self.lock:
                    self.refused[run_id] = decided.text[:160]


def setup(url: str, n: int) -> str:
    """Schema, queue, tenant, repository and the maintainer; returns the maintainer's token."""
    migrate(url)
    with Database(url, max_size=2) as db:
        with db.owner_connection() as conn:
            setup_queue(conn)
        admin.add_tenant(db, "load")
        admin.add_repository(db, "load", REPO)
        return admin.add_principal(db, "load", "maintainer", [Role.APPROVER]).token


def fleet_env(url: str, fake_url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    return {
        **keep,
        "RESOLVEFLOW_DATABASE_URL": url,
        "RESOLVEFLOW_GITHUB_API_URL": fake_url,
        "RESOLVEFLOW_GITHUB_WEB_URL": fake_url,
        "RESOLVEFLOW_GITHUB_TOKEN": TOKEN,
        "RESOLVEFLOW_GITHUB_WEBHOOK_SECRET": SECRET,
        "RESOLVEFLOW_EMBEDDER": "fake",  # hashing: no model to load in six processes
        "RESOLVEFLOW_PACE_ENABLED": "false",
        "RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS": "2",
        "RESOLVEFLOW_LEASE_SECONDS": "10",  # >= 5 x the GitHub timeout (checked at start-up)
        "RESOLVEFLOW_RUN_LEASE_SECONDS": "30",
        "RESOLVEFLOW_RECONCILE_INTERVAL_SECONDS": "5",
        "RESOLVEFLOW_DB_POOL_MAX_SIZE": "5",  # 6 processes x (5 + checkpoints 4 + queue 4) < 100
        "RESOLVEFLOW_LIMIT_WEBHOOK_RUNS_PER_DAY": "100000",
        "RESOLVEFLOW_LOG_LEVEL": "WARNING",
    }


@dataclass
class Outcome:
    deliveries: int = 0
    delivery_seconds: float = 0.0
    runs_seconds: float = 0.0
    approvals: int = 0
    approve_seconds: float = 0.0
    total_seconds: float = 0.0
    clients: Clients | None = None
    fleet: Fleet | None = None
    chaos: Chaos | None = None
    final: Snapshot | None = None


def drive(args: argparse.Namespace, url: str, fake: FakeGitHubServer, token: str) -> Outcome:
    workdir = Path(tempfile.mkdtemp(prefix="rf-load-procs-"))
    if not args.keep_logs:
        atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    exe = Path(sys.executable).parent / "resolveflow"
    fleet = Fleet(exe, fleet_env(url, fake.url), workdir, webs=2, workers=4)
    print(f"starting 2 web processes and 4 workers (logs in {workdir})")
    fleet.start()
    clients = Clients(fleet.urls, token)
    out = Outcome(clients=clients, fleet=fleet)
    try:
        if args.chaos:
            out.chaos = Chaos(fleet, url, args.seed, args.kills, args.chaos_window)
            out.chaos.start()
        sends = schedule(args.issues, args.redeliver, random.Random(args.seed))
        began = time.monotonic()
        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(clients.deliver, sends))
        out.deliveries, out.delivery_seconds = len(sends), time.monotonic() - began
        wait_paused(url, args.issues, args.converge_seconds, fleet)
        out.runs_seconds = time.monotonic() - began
        deadline = time.monotonic() + args.converge_seconds
        while time.monotonic() < deadline:
            fleet.supervise()
            now = snapshot(url)
            # A run whose approval was refused is asked once more per round, not hammered.
            todo = [r for r in now.undecided if r not in clients.refused]
            if todo:
                t = time.monotonic()
                with ThreadPoolExecutor(CLIENT_THREADS) as pool:
                    list(pool.map(clients.approve, enumerate(todo)))
                if not out.approvals:  # the first round is the rate; later ones are stragglers
                    out.approvals, out.approve_seconds = len(todo), time.monotonic() - t
                continue
            if now.settled and (out.chaos is None or not out.chaos.is_alive()):
                break
            time.sleep(5.0)
            for run_id in now.undecided:  # try the refused ones again after the pause
                clients.approve((0, run_id))
        out.total_seconds = time.monotonic() - began
    finally:
        if out.chaos is not None:
            out.chaos.halt.set()
            out.chaos.join(timeout=120)
        fleet.stop()
    out.final = snapshot(url)
    return out


def p(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100)[q - 1] if len(samples) > 1 else float("nan")


_MARKER = re.compile(r"<!-- resolveflow:action=([0-9a-f-]+) -->")


def report(args: argparse.Namespace, url: str, fake: FakeGitHubServer, out: Outcome) -> None:
    assert out.clients is not None and out.fleet is not None and out.final is not None
    final, clients = out.final, out.clients
    with psycopg.connect(url, autocommit=True) as conn:
        posted = [float(row[0]) for row in conn.execute(POSTED)]
        row = conn.execute(COMMENTS_DUE).fetchone()
        comments_due = int(row[0]) if row else 0
        reasons = conn.execute(FAILED).fetchall()
        diagnosis = {name: conn.execute(sql).fetchone()[0] for name, sql in DIAGNOSIS.items()}
    markers: list[str] = []
    issues_two_executions = 0
    for number in range(1, args.issues + 1):
        found = [m for c in fake.comments(REPO, number) for m in _MARKER.findall(c["body"])]
        markers += found
        issues_two_executions += len(set(found)) > 1
    duplicates = len(markers) - len(set(markers))
    runs = sum(final.runs.values())
    sent = final.executions.get("sent", 0)
    acks = clients.acks
    print(f"\ndeliveries: {out.deliveries} sent in {out.delivery_seconds:.1f} s;", end=" ")
    print(f"statuses {dict(sorted(clients.statuses.items()))}; client retries {clients.retries}")
    print(
        f"webhook ack (client, first tries, n={len(acks)}): p50 {p(acks, 50) * 1000:.0f} ms"
        f"  p95 {p(acks, 95) * 1000:.0f} ms  p99 {p(acks, 99) * 1000:.0f} ms"
    )
    print(f"runs: {runs} ({runs / out.runs_seconds:.1f}/s, first delivery to last paused)")
    if out.approvals:
        rate = out.approvals / out.approve_seconds
        print(f"approvals through the API: {out.approvals} in {out.approve_seconds:.1f} s", end="")
        print(f" = {rate:.1f}/s")
    print(f"approval -> posted (n={len(posted)}): p50 {p(posted, 50):.2f} s", end="")
    print(f"  p95 {p(posted, 95):.2f} s  max {max(posted, default=float('nan')):.2f} s")
    print(f"whole flow: {out.total_seconds:.0f} s")
    print(f"runs by status: {dict(sorted(final.runs.items()))}")
    print(f"executions by state: {dict(sorted(final.executions.items()))}")
    print(f"issues with a run: {final.issues_with_run} of {args.issues}")
    for reason, count, sent_anyway in reasons:
        print(f"  failed x{count} ({sent_anyway} with the execution sent): {reason}")
    rows = [
        ("duplicates on the forge (same marker twice)", duplicates, 0),
        ("issues with two executions posted", issues_two_executions, 0),
        ("marked comments minus comments due", len(markers) - comments_due, 0),
        ("runs beyond one per issue", final.extra_runs, 0),
        ("executions sending past their lease", final.expired_sending, 0),
        (
            "runs still running or executing",
            final.runs.get("running", 0) + final.runs.get("executing", 0),
            0,
        ),
        ("decided runs not resumed", final.stalled, 0),
        ("executions pending", final.executions.get("pending", 0), 0),
    ]
    print(f"forge writes applied {fake.writes_applied} (received {fake.writes_received});", end="")
    print(f" executions sent {sent}, {comments_due} of them with a comment")
    for name, value, target in rows:
        print(f"  {name:46s} {value:5d}  target {target}  {'ok' if value == target else 'MISSED'}")
    for name, value in diagnosis.items():
        print(f"  {name}: {value}")
    for run_id, answer in clients.refused.items():
        if run_id in final.undecided:  # refused for good, not once on the way
            print(f"  approval of run {run_id} refused: {answer}")
    if out.chaos is not None:
        print(f"chaos (seed {args.seed}): done {out.chaos.done}, backends ended", end=" ")
        print(f"{out.chaos.backends_ended}; processes that died by themselves: {out.fleet.died}")
        for line in out.chaos.log + out.chaos.errors:
            print("  " + line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=500)
    parser.add_argument("--redeliver", type=float, default=0.1)
    parser.add_argument("--chaos", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kills", type=int, default=3, help="of each kind, with --chaos")
    parser.add_argument("--chaos-window", type=float, default=90.0, help="seconds")
    parser.add_argument("--converge-seconds", type=float, default=300.0)
    parser.add_argument("--keep-logs", action="store_true", help="the processes' logs")
    args = parser.parse_args()
    url = os.environ.get("RESOLVEFLOW_DATABASE_URL")
    if url is None:
        home = Path(tempfile.mkdtemp(prefix="rf-load-db-"))
        # Registered first so it runs last (LIFO): after pgserver has stopped its server.
        atexit.register(shutil.rmtree, home, ignore_errors=True)
        url = embedded_database_url(home)
    token = setup(url, args.issues)
    with FakeGitHubServer(default_login="resolveflow-bot") as fake:
        seed_forge(fake, args.issues)
        mode = "with chaos" if args.chaos else "no chaos"
        print(f"{args.issues} issues, {args.redeliver:.0%} redelivered, {mode}, seed {args.seed}")
        out = drive(args, url, fake, token)
        report(args, url, fake, out)


if __name__ == "__main__":
    main()
