"""From an ``issues`` webhook to the proposal in the inbox, per issue, with every part of triage on.

    python benchmarks/triage_latency.py --issues 40
    python benchmarks/triage_latency.py --issues 40 --data ../shared/data/hf-datasets --clone /tmp/m2/ds-clone

The product as it runs: the web app (uvicorn on 127.0.0.1) receives each signed ``issues.opened``
delivery, and ``resolveflow worker`` (procrastinate, its own process, as deployed) starts the
run, which reads the issue from the fake GitHub (``sandbox/``, on 127.0.0.1) and makes every part:
labels learned from the repository's labelled history, related issues from the tenant's index
(the shipped MiniLM embedder), likely files from a local clone, the request for missing facts;
provider none. The clock runs from sending the delivery to the run's proposal showing in the
API an approver reads the inbox through (``GET /api/v1/runs``), polled every 50 ms.

The tenant's index holds a real repository's history: hf-datasets (``--data``, read at run time
from the shared data and never copied; its issues and pull requests created before ``--since``),
then its next ``--issues`` issues are opened one at a time, as they were written, with the
bundle's clone (``--clone``) configured for likely files. Without the data, a synthetic history
of labelled issues stands in (no clone: the likely-files part is left out). The first issue the
worker takes is timed apart: it loads the embedder, reads the clone and learns the label model.
Prints the median and p95 next to the target (p95 <= 10 s), and how many runs kept each part.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import hmac
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from resolveflow.accounts import admin
from resolveflow.bootstrap.app import database_url, open_app
from resolveflow.config import DatabaseSettings, Settings, WebhookSettings
from resolveflow.domain.records import Role
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.sources import read_corpus
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.store.queue import setup_queue
from resolveflow.web.server import ServerThread

SECRET = "benchmark-secret"
TOKEN = "bench-token"
TARGET_P95_SECONDS = 10.0
TIMEOUT_SECONDS = 120.0  # an issue whose proposal takes longer is reported as timed out
ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "hf-datasets"
CLONE = Path("/tmp/m2/ds-clone")


def hf_corpus(data: Path, since: datetime, n: int) -> tuple[str, list[SourceDocument], list[Any]]:
    repo = "huggingface/datasets"
    source = f"github:{repo}"
    documents = [
        doc
        for name in ("issues.jsonl", "pulls.jsonl")
        if (data / name).exists()
        for doc in read_corpus(data / name, source)
    ]
    history = [d for d in documents if d.created_at is not None and d.created_at < since]
    later = sorted(
        (d for d in documents if d.kind == "issue" and d.created_at and d.created_at >= since),
        key=lambda d: (d.created_at, int(d.external_id)),
    )
    return repo, history, later[: n + 1]


TOPICS = {
    "bug": ["crash", "traceback", "error", "fails", "exception", "broken"],
    "enhancement": ["please add", "feature", "support for", "option", "would be nice", "allow"],
    "documentation": ["docs", "typo", "docstring", "readme", "guide", "example"],
    "streaming": ["streaming", "iterable", "shards", "stream", "buffer", "remote"],
}


def synthetic_corpus(n: int) -> tuple[str, list[SourceDocument], list[SourceDocument]]:
    """A history of 400 labelled issues in four topics, and ``n + 1`` new ones to open."""
    repo = "bench/synthetic"
    start = datetime(2023, 1, 1, tzinfo=UTC)
    documents = []
    for i in range(400 + n + 1):
        label = list(TOPICS)[i % len(TOPICS)]
        words = TOPICS[label]
        title = f"{words[i % 6]} in module{i % 37} when {words[(i + 1) % 6]}"
        body = (
            f"When I use module{i % 37} with {words[(i + 2) % 6]} it {words[(i + 3) % 6]}. "
            f"Version 2.{i % 9}.0, Python 3.11 on Linux. Steps: call load(x{i}).\n" * 4
        )
        documents.append(
            SourceDocument(
                source=f"github:{repo}",
                external_id=str(i + 1),
                kind="issue",
                title=title,
                body=body,
                labels=(label,) if i < 400 else (),
                state="closed" if i < 400 else "open",
                created_at=start + timedelta(hours=6 * i),
                repository=repo,
            )
        )
    return repo, documents[:400], documents[400:]


def delivery(repo: str, doc: Any, now: datetime) -> bytes:
    """An ``issues.opened`` delivery shaped like GitHub's, for the issue as it was written."""
    user = {"login": "reporter", "id": 2, "type": "User", "site_admin": False}
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    issue = {
        "number": int(doc.external_id),
        "title": doc.title,
        "body": doc.body,
        "user": user,
        "labels": [],
        "state": "open",
        "author_association": "NONE",
        "created_at": doc.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "updated_at": stamp,
    }
    repository = {"full_name": repo, "id": 7, "private": False, "owner": user}
    payload = {"action": "opened", "issue": issue, "repository": repository, "sender": user}
    return json.dumps(payload).encode()


def send(client: httpx.Client, body: bytes) -> None:
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": signature,
        "Content-Type": "application/json",
    }
    response = client.post("/webhooks/github", content=body, headers=headers)
    response.raise_for_status()


def wait_for_proposal(api: httpx.Client, target: str) -> tuple[str, dict[str, Any] | None]:
    """Poll the runs an approver sees until the issue's run has its proposal (or settles
    without one): its status and page."""
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        runs = api.get("/api/v1/runs", params={"limit": 20}).json()
        found = [r for r in runs if r["target"] == target]
        if found and found[0]["status"] not in ("running",):
            run = found[0]
            return run["status"], api.get(f"/api/v1/runs/{run['run_id']}").json()
        time.sleep(0.05)
    return "timed out", None


def kept_parts(page: dict[str, Any] | None) -> list[str]:
    if page is None:
        return []
    detail = page.get("detail") or {}
    return [p["name"] for p in detail.get("parts", []) if p.get("kept")]


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "resolveflow", "worker"], env=env, stdout=handle, stderr=handle
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=40, help="issues opened and timed")
    parser.add_argument("--data", type=Path, default=SHARED, help="the hf-datasets corpus")
    parser.add_argument("--clone", type=Path, default=CLONE, help="its git clone (likely files)")
    parser.add_argument("--since", default="2023-03-01", help="history before, replay after")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between two issues")
    parser.add_argument(
        "--label-as-maintainers",
        action="store_true",
        help="after each proposal, give the issue its maintainers' labels (a labeled webhook)",
    )
    args = parser.parse_args()
    since = datetime.fromisoformat(args.since).replace(tzinfo=UTC)
    if (args.data / "issues.jsonl").exists():
        repo, history, opened = hf_corpus(args.data, since, args.issues)
        corpus = f"{args.data} (history before {args.since})"
    else:
        repo, history, opened = synthetic_corpus(args.issues)
        corpus = "synthetic (no shared data found)"
    clone = args.clone if (args.clone / "HEAD").exists() or (args.clone / ".git").exists() else None
    if repo.startswith("bench/"):
        clone = None

    home = Path(tempfile.mkdtemp(prefix="rf-bench-triage-latency-"))
    # Registered before the embedded Postgres starts, so it runs after pgserver's own exit handler
    # has stopped the server (atexit runs last-in, first-out): never delete a running server's data.
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    policy = home / "policy.toml"
    policy.write_text(
        f'[repositories."{repo}".refine]\nclone = "{clone}"\n' if clone else "", encoding="utf-8"
    )
    with FakeGitHubServer() as fake:
        labels = sorted({label for doc in history for label in doc.labels})
        fake.add_repo(repo, labels)
        fake.register_token(TOKEN, "resolveflow-bot")
        env_values = {
            "RESOLVEFLOW_HOME": str(home),
            "RESOLVEFLOW_GITHUB_API_URL": fake.url,
            "RESOLVEFLOW_GITHUB_WEB_URL": fake.url,
            "RESOLVEFLOW_GITHUB_TOKEN": TOKEN,
            "RESOLVEFLOW_GITHUB_WEBHOOK_SECRET": SECRET,
            "RESOLVEFLOW_WEBHOOK_AUTO_TRIAGE": "true",
            "RESOLVEFLOW_POLICY_FILE": str(policy),
            "RESOLVEFLOW_MODEL_PROVIDER": "none",
        }
        os.environ.update(env_values)
        settings = Settings(
            database=DatabaseSettings(home=home),
            webhooks=WebhookSettings(secret=SECRET, auto_triage=True),
        )
        with open_app(settings) as app:
            with app.db.owner_connection() as conn:
                setup_queue(conn)
            tenant_id = admin.add_tenant(app.db, "bench").id
            admin.add_repository(app.db, "bench", repo)
            token = admin.add_principal(app.db, "bench", "alex", [Role.APPROVER]).token
            began = time.perf_counter()
            stats = app.indexer().upsert(tenant_id, history)
            print(
                f"corpus: {corpus}; {len(history)} documents indexed in "
                f"{time.perf_counter() - began:.0f} s ({stats.documents} read); clone: {clone}"
            )
            env = {**os.environ, **env_values, "RESOLVEFLOW_DATABASE_URL": database_url(settings)}
            worker = start_worker(env, home / "worker.log")
            try:
                with ServerThread(app) as server:
                    measure(server.url, token, fake, repo, opened, args)
            finally:
                worker.terminate()
                worker.wait(timeout=60)


def measure(
    url: str,
    token: str,
    fake: FakeGitHubServer,
    repo: str,
    opened: list[Any],
    args: argparse.Namespace,
) -> None:
    hook = httpx.Client(base_url=url, timeout=30)
    api = httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {token}"})
    samples: list[float] = []
    statuses: Counter[str] = Counter()
    parts: Counter[str] = Counter()
    for index, doc in enumerate(opened):
        now = datetime.now(UTC)
        fake.add_issue(
            repo,
            int(doc.external_id),
            doc.title,
            doc.body,
            user="reporter",
            created_at=doc.created_at,
            updated_at=now,
            author_association="NONE",
        )
        load = os.getloadavg()[0]
        began = time.perf_counter()
        send(hook, delivery(repo, doc, now))
        status, page = wait_for_proposal(api, f"{repo}#{doc.external_id}")
        elapsed = time.perf_counter() - began
        if index == 0:
            print(
                f"first issue (cold worker: embedder, clone, label model): {elapsed:.2f} s, {status}"
            )
            continue
        samples.append(elapsed)
        statuses[status] += 1
        parts.update(kept_parts(page))
        print(
            f"  #{doc.external_id}: {elapsed:6.2f} s  {status:18s} load {load:4.1f}  {kept_parts(page)}"
        )
        if args.label_as_maintainers and doc.labels:
            label_as_maintainers(hook, fake, repo, doc)
        time.sleep(args.gap)
    report(samples, statuses, parts)


def label_as_maintainers(hook: httpx.Client, fake: FakeGitHubServer, repo: str, doc: Any) -> None:
    """The maintainers label the issue (on the forge, then GitHub's ``labeled`` delivery): the
    index takes it, so the next run finds the labelled history moved and the model relearns."""
    number = int(doc.external_id)
    response = httpx.post(
        f"{fake.url}/repos/{repo}/issues/{number}/labels",
        json={"labels": list(doc.labels)},
        headers={"Authorization": f"token {TOKEN}"},
        timeout=10,
    )
    response.raise_for_status()
    payload = json.loads(delivery(repo, doc, datetime.now(UTC) + timedelta(seconds=1)))
    payload["action"] = "labeled"
    payload["label"] = {"name": doc.labels[0]}
    send(hook, json.dumps(payload).encode())


def report(samples: list[float], statuses: Counter[str], parts: Counter[str]) -> None:
    if len(samples) < 2:
        print("too few issues to report")
        return
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    p95 = cuts[94]
    verdict = "met" if p95 <= TARGET_P95_SECONDS else "NOT met"
    print(f"\n{len(samples)} issues: {dict(statuses)}; parts kept: {dict(parts)}")
    print(
        f"webhook to proposal: median {statistics.median(samples):.2f} s, p95 {p95:.2f} s,"
        f" max {max(samples):.2f} s; target p95 <= {TARGET_P95_SECONDS:.0f} s: {verdict}"
        f" (load average now {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
