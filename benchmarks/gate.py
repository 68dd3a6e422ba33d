"""Executor gate throughput: W worker processes drain N approved actions against the fake GitHub.

    python benchmarks/gate.py --workers 8 --n 3000 [--rounds 5] [--labels]

Every execution goes the full way, through `Executor.execute_next` as the worker runs it: one
transaction claims it with a lease, takes the lineage lock, re-reads approval and proposal,
recomputes the digest, re-checks approver and policy and records the attempt; then the HTTP POST to
the fake GitHub on loopback; then outcome, state and audit in one transaction. Prints executions per second,
claim-to-sent latency percentiles and the number of duplicate writes (must be 0). Each round drains a
fresh tenant's actions; the summary gives the median round, because this machine is noisy.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.bootstrap.app import migrate
from resolveflow.domain.records import ExecutionState, Role
from resolveflow.gate import approvals, proposals
from resolveflow.gate.executor import Executor
from resolveflow.gate.lease import GateSettings
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url

REPO = "bench/repo"


def _worker(url: str, api: str, tenant: str, start: mp.Event, out: mp.Queue) -> None:  # type: ignore[type-arg]
    tenant_id = UUID(tenant)
    latencies: list[float] = []
    with Database(url, max_size=2) as db, GitHubKitClient(api, "bench-token", 10.0) as github:
        executor = Executor(db, github, GateSettings(lease_seconds=60))
        start.wait()
        while True:
            t0 = time.perf_counter()
            done = executor.execute_next(tenant_id)
            if done is None:
                break
            if done.state is ExecutionState.SENT:
                latencies.append(time.perf_counter() - t0)
    out.put(latencies)


def _prepare(db: Database, name: str, n: int, labels: bool) -> UUID:
    tenant = admin.add_tenant(db, name)
    rita = authenticate(db, admin.add_principal(db, name, "rita", [Role.REQUESTER]).token)
    alex = authenticate(db, admin.add_principal(db, name, "alex", [Role.APPROVER]).token)
    admin.add_repository(db, name, REPO)
    for i in range(n):
        proposal = proposals.create_proposal(
            db,
            rita,
            repository=REPO,
            issue=1 + i % 50,
            comment=f"{name} comment {i}",
            labels=["bug"] if labels else [],
        )
        approvals.approve(db, alex, proposal.id, proposal.digest, 3600)
    return tenant.id


@dataclass(frozen=True)
class Round:
    executions: int
    per_second: float
    p50_ms: float
    p95_ms: float


def _drain(url: str, api: str, tenant_id: UUID, workers: int) -> Round:
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(url, api, str(tenant_id), start, out))
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
    time.sleep(3)  # let every worker import and connect before the clock starts
    began = time.perf_counter()
    start.set()
    latencies = [lat for _ in procs for lat in out.get(timeout=600)]
    elapsed = time.perf_counter() - began
    for proc in procs:
        proc.join()
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return Round(len(latencies), len(latencies) / elapsed, cuts[49] * 1000, cuts[94] * 1000)


def _duplicates(fake: FakeGitHubServer) -> int:
    markers: Counter[str] = Counter()
    for number in range(1, 51):
        for comment in fake.comments(REPO, number):
            markers[comment["body"].rsplit("resolveflow:action=", 1)[-1]] += 1
    return sum(count - 1 for count in markers.values() if count > 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--labels", action="store_true", help="also add a label (2 writes each)")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="rf-bench-"))
    url = embedded_database_url(home)
    migrate(url)
    rounds: list[Round] = []
    with FakeGitHubServer() as fake:
        fake.add_repo(REPO, ["bug"])
        for number in range(1, 51):
            fake.add_issue(REPO, number, f"issue {number}")
        for index in range(args.rounds):
            with Database(url, max_size=4) as db:
                tenant_id = _prepare(db, f"bench{index}", args.n, args.labels)
            result = _drain(url, fake.url, tenant_id, args.workers)
            rounds.append(result)
            print(
                f"round {index + 1}: {result.executions}/{args.n} executions, "
                f"{result.per_second:.1f}/s, p50 {result.p50_ms:.1f} ms, p95 {result.p95_ms:.1f} ms"
            )
        writes, duplicates = fake.writes_received, _duplicates(fake)

    per_second = sorted(r.per_second for r in rounds)
    print(f"workers {args.workers}, {args.rounds} rounds of {args.n}, labels {args.labels}")
    print(f"executions per second  median {statistics.median(per_second):.1f}")
    print(f"                       min {per_second[0]:.1f}, max {per_second[-1]:.1f}")
    print(f"claim-to-sent p50      {statistics.median(r.p50_ms for r in rounds):8.2f} ms (median)")
    print(f"claim-to-sent p95      {statistics.median(r.p95_ms for r in rounds):8.2f} ms (median)")
    print(f"writes received        {writes:8d}")
    print(f"duplicate writes       {duplicates:8d}")


if __name__ == "__main__":
    main()
