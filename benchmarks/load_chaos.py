"""The processes of ``benchmarks/load.py``, the chaos done to them, and what the database says.

``Fleet`` starts ``resolveflow serve`` and ``resolveflow worker`` as real subprocesses on one
database, restarts one that was killed (or that died by itself, counted apart), and stops them
all at the end (SIGTERM, then SIGKILL after a bound). ``Chaos`` is a thread that, at moments drawn
from a seeded RNG, SIGKILLs a worker, SIGKILLs a web process, or ends a random share of the
application's database backends with ``pg_terminate_backend``. Only processes this module started
are ever signalled, by their pid. ``snapshot`` reads the outcome from the database, read-only
(as the superuser: every tenant's rows).
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

READY_SECONDS = 90.0  # a web process on a busy 2-core machine: imports, pools, first answer
STOP_SECONDS = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Proc:
    kind: str  # "web" or "worker"
    index: int
    port: int | None = None
    popen: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Fleet:
    """N web processes and M workers of the installed ``resolveflow`` on one database."""

    exe: Path
    env: dict[str, str]
    workdir: Path
    webs: int
    workers: int
    procs: list[Proc] = field(default_factory=list)
    died: int = 0  # exits nobody asked for (restarted like a supervisor would)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: bool = False

    def start(self) -> None:
        self.procs = [Proc("web", i, port=free_port()) for i in range(self.webs)]
        self.procs += [Proc("worker", i) for i in range(self.workers)]
        for proc in self.procs:
            self._spawn(proc)
        for proc in self.web_procs:
            self._wait_ready(proc)

    @property
    def web_procs(self) -> list[Proc]:
        return [proc for proc in self.procs if proc.kind == "web"]

    @property
    def urls(self) -> list[str]:
        return [proc.url for proc in self.web_procs]

    def _spawn(self, proc: Proc) -> None:
        home = self.workdir / f"{proc.kind}{proc.index}"
        home.mkdir(parents=True, exist_ok=True)
        env = {**self.env, "RESOLVEFLOW_HOME": str(home)}
        args = [str(self.exe), "worker"]
        if proc.kind == "web":
            args = [str(self.exe), "serve", "--host", "127.0.0.1", "--port", str(proc.port)]
        log = (self.workdir / f"{proc.kind}{proc.index}.log").open("ab")
        # A session of its own: a Ctrl-C in the terminal reaches this script, which then stops
        # the fleet in order, instead of every child at once.
        proc.popen = subprocess.Popen(args, env=env, stdout=log, stderr=log, start_new_session=True)
        log.close()
        proc.starts += 1

    def _wait_ready(self, proc: Proc) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            assert proc.popen is not None
            if proc.popen.poll() is not None:
                raise RuntimeError(f"{proc.kind}{proc.index} exited; see its log in {self.workdir}")
            try:
                if httpx.get(f"{proc.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{proc.kind}{proc.index} not ready after {READY_SECONDS:.0f} s")

    def kill(self, kind: str, rng: random.Random) -> str:
        """SIGKILL one process of ``kind`` (chosen by ``rng``) and start it again."""
        with self.lock:
            proc = rng.choice([p for p in self.procs if p.kind == kind])
            assert proc.popen is not None
            os.kill(proc.popen.pid, signal.SIGKILL)
            proc.popen.wait(timeout=STOP_SECONDS)
            self._spawn(proc)
        if kind == "web":  # outside the lock: the supervisor may look meanwhile
            self._wait_ready(proc)
        return f"{kind}{proc.index}"

    def supervise(self) -> None:
        """Restart a process that exited by itself (a supervisor's job); counted in ``died``."""
        with self.lock:
            if self._stopping:
                return
            for proc in self.procs:
                if proc.popen is not None and proc.popen.poll() is not None:
                    self.died += 1
                    self._spawn(proc)

    def stop(self) -> None:
        with self.lock:
            self._stopping = True
            running = [p.popen for p in self.procs if p.popen and p.popen.poll() is None]
            for popen in running:
                popen.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + STOP_SECONDS
            for popen in running:
                try:
                    popen.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    popen.kill()
                    popen.wait(timeout=5)


def terminate_backends(admin_url: str, rng: random.Random, share: float = 0.5) -> int:
    """End a random share of the application's client backends on this database (as the
    superuser of the embedded server); the script's own connection is spared."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        pids = [
            row[0]
            for row in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                " ORDER BY pid"
            )
        ]
        chosen = rng.sample(pids, max(1, int(len(pids) * share))) if pids else []
        for pid in chosen:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    return len(chosen)


@dataclass(eq=False)  # a thread must stay hashable (threading keeps them in dicts)
class Chaos(threading.Thread):
    """Does ``each`` worker kills, web kills and backend terminations at seeded moments in
    ``[2 s, window]`` after ``start()``; stops early when ``halt`` is set."""

    fleet: Fleet
    admin_url: str
    seed: int
    each: int
    window: float
    halt: threading.Event = field(default_factory=threading.Event)
    done: dict[str, int] = field(default_factory=lambda: {"worker": 0, "web": 0, "backends": 0})
    backends_ended: int = 0
    log: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        threading.Thread.__init__(self, name="chaos", daemon=True)
        self.rng = random.Random(self.seed)
        kinds = ["worker", "web", "backends"] * self.each
        self.plan = sorted((self.rng.uniform(2.0, self.window), kind) for kind in kinds)

    def run(self) -> None:
        began = time.monotonic()
        for at, kind in self.plan:
            if self.halt.wait(max(0.0, began + at - time.monotonic())):
                return
            try:
                if kind == "backends":
                    ended = terminate_backends(self.admin_url, self.rng)
                    self.backends_ended += ended
                    what = f"{ended} backends"
                else:
                    what = self.fleet.kill(kind, self.rng)
            except Exception as exc:  # a failed act of chaos is reported, never fatal
                self.errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                continue
            self.done[kind] += 1
            self.log.append(f"t={time.monotonic() - began:6.1f}s  {kind:8s} {what}")


# --- what the database says (read-only, as the superuser: every tenant's rows) ---------------

_UNDECIDED = """
SELECT r.id FROM runs r
JOIN LATERAL (SELECT p.id FROM proposals p WHERE p.run_id = r.id
              ORDER BY p.version DESC, p.created_at DESC LIMIT 1) latest ON true
WHERE r.status = 'awaiting_approval'
  AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.proposal_id = latest.id)
ORDER BY r.created_at
"""
_STALLED = """
SELECT count(*) FROM runs r
JOIN LATERAL (SELECT p.id FROM proposals p WHERE p.run_id = r.id
              ORDER BY p.version DESC, p.created_at DESC LIMIT 1) latest ON true
WHERE r.status = 'awaiting_approval'
  AND EXISTS (SELECT 1 FROM approvals a WHERE a.proposal_id = latest.id)
"""
_WEBHOOK_JOBS = """
SELECT count(*) FROM procrastinate_jobs
WHERE status = 'todo' AND task_name IN ('handle_delivery', 'start_webhook_run')
"""

# From an approval to its first write acknowledged by the forge, per sent execution.
POSTED = """
SELECT extract(epoch FROM min(o.finished_at) - a.decided_at)
FROM executions e JOIN approvals a ON a.id = e.approval_id
JOIN execution_attempts t ON t.execution_id = e.id
JOIN attempt_outcomes o ON o.attempt_id = t.id AND o.outcome = 'sent'
WHERE e.state = 'sent' GROUP BY e.id, a.decided_at
"""
# Sent executions whose action has a comment: each must leave exactly one marked comment.
COMMENTS_DUE = """
SELECT count(*) FROM executions e JOIN proposals p ON p.id = e.proposal_id
WHERE e.state IN ('sent', 'partial') AND coalesce(p.action->>'comment', '') <> ''
"""
# Failed runs by reason, and how many of them had their approved action sent all the same.
FAILED = """
SELECT left(coalesce(r.detail->>'error', r.detail::text), 90), count(*),
       count(*) FILTER (WHERE e.state = 'sent')
FROM runs r LEFT JOIN executions e ON e.id::text = r.detail->>'execution_id'
WHERE r.status = 'failed' GROUP BY 1 ORDER BY 2 DESC
"""

# Why a run is missing or stuck, for the report's closing lines.
DIAGNOSIS = {
    "issues with no run, delivery claimed (its worker killed; the job is requeued)": """
        SELECT count(DISTINCT d.issue_number) FROM webhook_deliveries d
        WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.issue_number = d.issue_number)
          AND EXISTS (SELECT 1 FROM webhook_run_claims c WHERE c.delivery_id = d.delivery_id)""",
    "issues with no run, delivery never claimed": """
        SELECT count(DISTINCT d.issue_number) FROM webhook_deliveries d
        WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.issue_number = d.issue_number)
          AND NOT EXISTS (SELECT 1 FROM webhook_run_claims c
                          JOIN webhook_deliveries o ON o.delivery_id = c.delivery_id
                          WHERE o.issue_number = d.issue_number)""",
    "runs running or executing whose run lease has expired or is gone": """
        SELECT count(*) FROM runs r LEFT JOIN run_leases l ON l.run_id = r.id
        WHERE r.status IN ('running', 'executing')
          AND (l.expires_at IS NULL OR l.expires_at < clock_timestamp())""",
    "queue jobs left 'doing' (their worker was killed)": """
        SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'""",
}


@dataclass
class Snapshot:
    runs: dict[str, int]
    executions: dict[str, int]
    issues_with_run: int
    extra_runs: int  # runs beyond one per issue (a redelivery must start none)
    undecided: list[str]
    stalled: int  # awaiting approval although decided (maintenance resumes these)
    expired_sending: int
    webhook_jobs_todo: int

    def runs_paused(self, issues: int) -> bool:
        return self.issues_with_run >= issues and not self.runs.get("running")

    @property
    def settled(self) -> bool:
        """Nothing left to move: no run running, executing or decided-but-waiting, nothing to
        approve, no execution pending, sending or unknown."""
        busy = ("running", "executing")
        open_states = ("pending", "sending", "unknown")
        return (
            not any(self.runs.get(s) for s in busy)
            and not any(self.executions.get(s) for s in open_states)
            and not self.undecided
            and not self.stalled
        )


def snapshot(url: str) -> Snapshot:
    with psycopg.connect(url, autocommit=True) as conn:

        def counts(sql: str) -> dict[str, int]:
            return {row[0]: row[1] for row in conn.execute(sql)}

        def one(sql: str) -> int:
            row = conn.execute(sql).fetchone()
            return int(row[0]) if row and row[0] is not None else 0

        return Snapshot(
            runs=counts("SELECT status, count(*) FROM runs GROUP BY status"),
            executions=counts("SELECT state, count(*) FROM executions GROUP BY state"),
            issues_with_run=one("SELECT count(DISTINCT issue_number) FROM runs"),
            extra_runs=one(
                "SELECT count(*) - count(DISTINCT (repository, issue_number)) FROM runs"
            ),
            undecided=[str(row[0]) for row in conn.execute(_UNDECIDED)],
            stalled=one(_STALLED),
            expired_sending=one(
                "SELECT count(*) FROM executions"
                " WHERE state = 'sending' AND lease_expires_at < clock_timestamp()"
            ),
            webhook_jobs_todo=one(_WEBHOOK_JOBS),
        )


def wait_paused(url: str, issues: int, seconds: float, fleet: Fleet) -> None:
    """Until every issue has a run past triage; or until nothing has moved for 15 s with no
    webhook job left to do (a run whose worker was killed comes back only when maintenance
    requeues its job, a minute or two later: the approval loop picks it up then)."""
    deadline, last, since = time.monotonic() + seconds, None, time.monotonic()
    while time.monotonic() < deadline:
        fleet.supervise()
        now = snapshot(url)
        if now.runs_paused(issues):
            return
        key = (tuple(sorted(now.runs.items())), now.webhook_jobs_todo)
        if key != last:
            last, since = key, time.monotonic()
        elif now.webhook_jobs_todo == 0 and time.monotonic() - since > 15:
            return
        time.sleep(0.5)
