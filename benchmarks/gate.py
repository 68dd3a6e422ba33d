"""Executor gate throughput: W worker processes drain N approved actions against the fake GitHub.

    python benchmarks/gate.py --workers 8 --n 2000 [--labels]

Every execution goes the full way: conditional claim with a lease, re-read of approval and proposal,
digest recomputation, approver and policy re-check, committed attempt row, HTTP POST to the fake
GitHub on loopback, outcome + state + audit in one transaction. Prints executions per second,
claim-to-sent latency percentiles and the number of duplicate writes (must be 0).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from uuid import UUID

from resolveflow.adapters.github_fake import FakeGitHubServer
from resolveflow.adapters.githubkit_client import GitHubKitClient
from resolveflow.domain.records import ExecutionState, Role
from resolveflow.execution.gate import Executor, GateSettings
from resolveflow.service import admin, proposals
from resolveflow.service.auth import authenticate
from resolveflow.store import executions as execution_store
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url
from resolveflow.wiring import migrate

REPO = "bench/repo"


def _worker(url: str, api: str, tenant: str, start: mp.Event, out: mp.Queue) -> None:  # type: ignore[type-arg]
    tenant_id = UUID(tenant)
    latencies: list[float] = []
    with Database(url, max_size=2) as db, GitHubKitClient(api, "bench-token", 10.0) as github:
        executor = Executor(db, github, GateSettings(lease_seconds=60))
        start.wait()
        while True:
            t0 = time.perf_counter()
            with db.tenant(tenant_id) as conn:
                claimed = execution_store.claim_next_due(conn, tenant_id, executor.owner, 60)
            if claimed is None:
                break
            done = executor.process(claimed)
            if done.state is ExecutionState.SENT:
                latencies.append(time.perf_counter() - t0)
    out.put(latencies)


def _prepare(db: Database, n: int, labels: bool) -> UUID:
    tenant = admin.add_tenant(db, "bench")
    rita = authenticate(db, admin.add_principal(db, "bench", "rita", [Role.REQUESTER]).token)
    alex = authenticate(db, admin.add_principal(db, "bench", "alex", [Role.APPROVER]).token)
    admin.add_repository(db, "bench", REPO)
    for i in range(n):
        proposal = proposals.create_proposal(
            db,
            rita,
            repository=REPO,
            issue=1 + i % 50,
            comment=f"benchmark comment {i}",
            labels=["bug"] if labels else [],
        )
        proposals.approve(db, alex, proposal.id, proposal.digest, 3600)
    return tenant.id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--labels", action="store_true", help="also add a label (2 writes each)")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="rf-bench-"))
    url = embedded_database_url(home)
    migrate(url)
    with FakeGitHubServer() as fake:
        fake.add_repo(REPO, ["bug"])
        for number in range(1, 51):
            fake.add_issue(REPO, number, f"issue {number}")
        with Database(url, max_size=4) as db:
            prep = time.perf_counter()
            tenant_id = _prepare(db, args.n, args.labels)
            print(f"prepared {args.n} approved actions in {time.perf_counter() - prep:.1f}s")

        ctx = mp.get_context("spawn")
        start, out = ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=_worker, args=(url, fake.url, str(tenant_id), start, out))
            for _ in range(args.workers)
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

        markers = Counter()
        for number in range(1, 51):
            for comment in fake.comments(REPO, number):
                markers[comment["body"].rsplit("resolveflow:action=", 1)[-1]] += 1
        duplicates = sum(count - 1 for count in markers.values() if count > 1)
        cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99

    print(f"workers {args.workers}, executions {len(latencies)}/{args.n}, labels {args.labels}")
    print(f"executions per second  {len(latencies) / elapsed:8.1f}")
    print(f"claim-to-sent p50      {cuts[49] * 1000:8.2f} ms")
    print(f"claim-to-sent p95      {cuts[94] * 1000:8.2f} ms")
    print(f"writes received        {fake.writes_received:8d}")
    print(f"duplicate writes       {duplicates:8d}")


if __name__ == "__main__":
    main()
