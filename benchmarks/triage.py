"""Triage throughput against the fake GitHub on loopback (no model).

    python benchmarks/triage.py --runs 200 --concurrency 1 4

Each run: fetch_evidence (issue, comments, check runs, labels over HTTP), normalize (strict
validation + snapshot), classify, build_proposal (digest, proposal row), pause with a Postgres
checkpoint; then approve -> resume -> execute (the gate posts the comment/label). Prints p50/p95 per
stage and runs per second for each concurrency level.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.bootstrap.app import migrate
from resolveflow.domain.records import Role
from resolveflow.gate.executor import Executor
from resolveflow.gate.lease import GateSettings
from resolveflow.policy_file import DEFAULT_POLICY
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.checkpoints import checkpoint_saver
from resolveflow.store.database import Database
from resolveflow.store.embedded import embedded_database_url
from resolveflow.triage.graph.build import TriageDeps, build_triage_graph
from resolveflow.triage.graph.runs import RunController

REPO = "bench/triage"
BODY = (
    "## Describe the bug\nLoading fails with streaming.\n\n## Steps to reproduce\n"
    "1. pip install datasets==2.14.0\n2. run\n\n```python\nload_dataset('c4', streaming=True)\n```\n"
)


class TimedGraph:
    """Streams node updates so each stage can be timed; otherwise behaves like the graph."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.timings: dict[str, list[float]] = defaultdict(list)
        self.lock = threading.Lock()

    def invoke(self, value: Any, config: Any) -> None:
        last = time.perf_counter()
        for update in self.graph.stream(value, config, stream_mode="updates"):
            now = time.perf_counter()
            for node in update:
                with self.lock:
                    self.timings[node].append(now - last)
            last = now

    def get_state(self, config: Any) -> Any:
        return self.graph.get_state(config)


def seed(fake: FakeGitHubServer, n: int) -> None:
    fake.add_repo(REPO, ["bug", "ci-failure", "needs-triage"])
    for number in range(1, n + 1):
        if number % 2:
            sha = f"{number:040x}"
            fake.add_pull_request(REPO, number, f"PR {number}", BODY, head_sha=sha)
            fake.add_check_run(REPO, sha, "tests", conclusion="failure")
            fake.add_check_run(REPO, sha, "lint", conclusion="success")
        else:
            fake.add_issue(REPO, number, f"Issue {number}", BODY)
        for c in range(3):
            fake.add_comment_directly(REPO, number, f"comment {c} on {number}")


def run_level(db: Database, fake: FakeGitHubServer, concurrency: int, numbers: list[int]) -> None:
    with GitHubKitClient(fake.url, "bench", 10.0) as github:
        pool = db.autocommit_pool(max_size=concurrency + 2)
        deps = TriageDeps(
            db=db,
            github=github,
            policy=lambda: DEFAULT_POLICY,
            executor=lambda: Executor(db, github, GateSettings()),
        )
        timed = TimedGraph(build_triage_graph(deps, checkpoint_saver(pool)))
        controller = RunController(db=db, graph=timed, lease_seconds=60, approval_ttl_seconds=3600)
        tenant = admin.add_tenant(db, f"bench-{concurrency}-{uuid.uuid4().hex[:6]}")
        admin.add_repository(db, tenant.name, REPO)
        rita = authenticate(
            db, admin.add_principal(db, tenant.name, "rita", [Role.REQUESTER]).token
        )
        alex = authenticate(db, admin.add_principal(db, tenant.name, "alex", [Role.APPROVER]).token)
        approve_times: list[float] = []

        def one(number: int) -> None:
            run_id = controller.start(rita, REPO, number)
            _, proposal_id = controller.find(alex, run_id)
            from resolveflow.gate.proposals import describe

            digest = describe(db, alex, proposal_id)["digest"]
            t0 = time.perf_counter()
            controller.approve(alex, run_id, digest)
            approve_times.append(time.perf_counter() - t0)

        began = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as workers:
            list(workers.map(one, numbers))
        elapsed = time.perf_counter() - began
        pool.close()
    print(
        f"\nconcurrency {concurrency}: {len(numbers)} runs in {elapsed:.1f}s = "
        f"{len(numbers) / elapsed:.1f} runs/s (start to executed)"
    )
    stages = ["fetch_evidence", "normalize", "classify", "investigate", "build_proposal"]
    for stage in stages:
        report(stage, timed.timings.get(stage, []))
    report("approve+resume+execute", approve_times)


def report(name: str, samples: list[float]) -> None:
    if len(samples) < 2:
        return
    cuts = statistics.quantiles(samples, n=100)
    print(
        f"  {name:24s} p50 {cuts[49] * 1000:7.2f} ms   p95 {cuts[94] * 1000:7.2f} ms"
        f"   (n={len(samples)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    url = embedded_database_url(Path(tempfile.mkdtemp(prefix="rf-bench-triage-")))
    migrate(url)
    with FakeGitHubServer() as fake, Database(url, max_size=12) as db:
        seed(fake, args.runs * len(args.concurrency))
        for index, level in enumerate(args.concurrency):
            numbers = list(range(index * args.runs + 1, (index + 1) * args.runs + 1))
            run_level(db, fake, level, numbers)
        print(f"\nGitHub writes received: {fake.writes_received}")


if __name__ == "__main__":
    main()
