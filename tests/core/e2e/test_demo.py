"""``resolveflow demo`` in real processes: embedded Postgres, the sandbox forge, a signed webhook,
the worker's triage run, an approval through the API, and the comment posted once.

Whatever way the demo ends (``--once``, SIGTERM, Ctrl-C, an error), its embedded Postgres must be
stopped before its throwaway folder is removed: a postmaster whose data folder was deleted under
it keeps running (until it notices, about a minute later, or for good)."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_demo_words import snake_case_words

# The demo's own shutdown: threads, then Postgres' fast shutdown. Seconds when the machine is
# free; one CI-like run of the whole suite saw both Ctrl-C tests pass 60 s at the same moment,
# so the bound is for a stalled machine, not a measure.
STOP_SECONDS = 150.0


def postmasters_under(folder: Path) -> list[int]:
    """Live ``postgres`` servers whose command line names a path inside ``folder`` (their ``-D``).

    Read from /proc (psutil is not a dependency of ours); zombies have an empty command line."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # the process ended while we looked
            continue
        if Path(os.fsdecode(argv[0])).name == "postgres" and any(
            os.fsencode(folder) in arg for arg in argv[1:]
        ):
            found.append(int(entry.name))
    return found


def _stop_leftovers(folder: Path) -> None:
    """After a failing run: stop what the demo left behind, so that one failure leaks nothing."""
    for pid in postmasters_under(folder):
        with_signal = signal.SIGQUIT  # immediate shutdown: its data folder may already be gone
        try:
            os.kill(pid, with_signal)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + 30
    while postmasters_under(folder) and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.fixture
def demo_env() -> Iterator[tuple[Path, dict[str, str]]]:
    # A short temporary folder: Postgres' socket path must stay under ~100 characters.
    folder = Path(tempfile.mkdtemp(prefix="rfd", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    # The hashing embedder's cosines are not calibrated like MiniLM's: its floor (docs/review.md).
    env.update(
        RESOLVEFLOW_EMBEDDER="fake",
        RESOLVEFLOW_RELEVANCE_FLOOR="0.4",
        TMPDIR=str(folder),
        COLUMNS="200",
    )
    try:
        yield folder, env
    finally:
        _stop_leftovers(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _demo(*args: str) -> list[str]:
    return [sys.executable, "-m", "resolveflow", "demo", *args]


def assert_nothing_left(folder: Path) -> None:
    """No server on the demo's data, and no demo folder: checked at once, with no grace period."""
    assert postmasters_under(folder) == [], "the demo's embedded Postgres is still running"
    assert list(folder.glob("resolveflow-demo-*")) == [], "the demo's folder was not removed"


def _runs_by_issue(summary: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {run["issue"]: run for run in summary["runs"]}


def test_demo_takes_every_branch_of_triage_and_posts_the_approved_comment_once(
    demo_env: tuple[Path, dict[str, str]],
) -> None:
    folder, env = demo_env
    result = subprocess.run(
        _demo("--once", "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    runs = _runs_by_issue(summary)
    assert sorted(runs) == [1, 6, 7, 8], "each open issue (and the one opened later) is a run"

    failing_ci = runs[7]  # deterministic: the failing checks and the CI label
    assert failing_ci["classification"] == "deterministic"
    assert failing_ci["rule"].startswith("has_failing_ci")
    assert failing_ci["labels"] == ["ci-failure"] and "tests (3.12)" in failing_ci["comment"]

    for number, duplicate_of in ((6, 2), (8, 4)):  # retrieval alone finds the closed duplicate
        run = runs[number]
        assert run["classification"] == "ai_investigation", run
        assert run["rule"].startswith("is_information_sparse")
        assert run["status"] == "awaiting_approval"
        investigation = run["investigation"]
        assert investigation["provider"] == "none" and investigation["model_calls"] == 0
        assert investigation["outcome"] == "approve", investigation
        assert investigation["cited_issues"] == [duplicate_of], investigation
        assert f"/sandbox/widgets/issues/{duplicate_of})" in run["comment"]
    assert runs[8]["arrived"] == "webhook, after the inbox was up"

    vague = runs[1]  # nothing to go on: a person looks
    assert vague["classification"] == "human_review" and vague["rule"].startswith("fallback")
    assert vague["labels"] == ["needs-triage"] and vague["status"] == "awaiting_approval"

    approved = summary["approved"]
    assert approved["issue"] == 7 and approved["run_id"] == failing_ci["run_id"]
    assert approved["approved_by"] == "maintainer"
    assert approved["execution_state"] == "sent" and failing_ci["status"] == "completed"
    assert approved["posted_as"] == "resolveflow-sandbox-bot"
    assert re.fullmatch(
        r"http://127\.0\.0\.1:\d+/sandbox/widgets/issues/7#issuecomment-\d+",
        approved["comment_url"],
    )
    assert approved["comments_on_issue"] == 1 and approved["labels_on_issue"] == ["ci-failure"]
    assert summary["indexed_issues"] == 7
    assert summary["url"].startswith("http://127.0.0.1:")
    assert "Sandbox forge (NOT GitHub)" in result.stderr
    assert_nothing_left(folder)


def test_demo_once_in_text_says_what_was_approved_by_whom_and_where_unclipped(
    demo_env: tuple[Path, dict[str, str]],
) -> None:
    folder, env = demo_env
    env["COLUMNS"] = "50"  # narrower than the comment's lines: nothing may be cut or wrapped
    result = subprocess.run(
        _demo("--once"),
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    failing_line = next(line for line in out.splitlines() if "- [CI](" in line)
    assert re.fullmatch(
        r"- \[CI\]\(http://127\.0\.0\.1:\d+/sandbox/widgets/actions/runs/\d+\): "
        r"workflow run concluded \*\*failure\*\*",
        failing_line,
    ), failing_line
    assert "…" not in out
    assert "Drafted by ResolveFlow from the check results and approved by a maintainer." in out
    assert re.search(r"approved by maintainer\b.*sandbox/widgets#7", out, re.IGNORECASE), out
    # Every line in the pages' words: no branch, rule or status as its value (human_review).
    assert snake_case_words(out + result.stderr) == [], out + result.stderr
    assert "for a person to review (no rule matched)" in out, out
    assert re.search(
        r"posted as @resolveflow-sandbox-bot, once: "
        r"http://127\.0\.0\.1:\d+/sandbox/widgets/issues/7#issuecomment-\d+$",
        out,
        re.IGNORECASE | re.MULTILINE,
    ), out
    assert_nothing_left(folder)


class _Stdout:
    """The demo's stdout, line by line, read on one thread for the life of the process: a
    buffered reader may hold lines the pipe no longer signals as readable."""

    def __init__(self, process: subprocess.Popen[str], stderr: Path) -> None:
        assert process.stdout is not None
        stdout = process.stdout
        self.process, self.stderr = process, stderr
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(
            target=lambda: [self.lines.put(line) for line in stdout], daemon=True
        ).start()

    def wait_for(self, needle: str, seconds: float) -> str:
        """Reads until a line contains ``needle`` (or fails with what it read)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            self.seen.append(line)
            if needle in line:
                return line
        raise AssertionError(
            f"the demo never printed {needle!r}; stdout: {''.join(self.seen)!r}; "
            f"stderr ends: {self.stderr.read_text()[-2000:]}"
        )


@pytest.mark.parametrize(
    "stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C (SIGINT to the group)"]
)
def test_a_serving_demo_stopped_by_a_signal_stops_postgres_then_removes_its_folder(
    demo_env: tuple[Path, dict[str, str]], stop: signal.Signals
) -> None:
    folder, env = demo_env
    stderr = folder / "demo.stderr"  # a file: a full stderr pipe would block the demo
    # Its own process group, as a terminal would give it: Ctrl-C signals the whole group.
    with stderr.open("w") as errors:
        demo = subprocess.Popen(
            _demo(),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,
        )
    try:
        stdout = _Stdout(demo, stderr)
        stdout.wait_for("Inbox: http://127.0.0.1:", 180)
        assert postmasters_under(folder), "the check cannot see the demo's running Postgres"
        # A few seconds later a new issue arrives by webhook while the user watches.
        stdout.wait_for("arrived by webhook", 60)
        if stop is signal.SIGINT:
            os.killpg(demo.pid, stop)
        else:
            demo.send_signal(stop)
        demo.wait(timeout=STOP_SECONDS)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait(timeout=10)
    assert_nothing_left(folder)
    assert demo.returncode == 0, stderr.read_text()  # a stop asked for, not a failure


def test_a_demo_that_fails_after_postgres_started_stops_it_and_removes_its_folder(
    demo_env: tuple[Path, dict[str, str]],
) -> None:
    folder, env = demo_env
    with socket.socket() as taken:  # the inbox's port is taken: the web server cannot start
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            _demo("--once", "--json", "--port", str(port)),
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            stdin=subprocess.DEVNULL,
        )
    assert result.returncode == 7, result.stderr  # a configuration error (docs/errors.md)
    assert "the web server did not start" in result.stderr
    assert "Starting the embedded Postgres" in result.stderr  # it failed after the start
    assert_nothing_left(folder)
