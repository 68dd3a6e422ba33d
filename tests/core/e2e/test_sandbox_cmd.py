"""``resolveflow sandbox start|serve|stop`` in real processes: the printed lines point githubkit at
a seeded forge that takes the printed token as the service account; start is idempotent, a stale
state file is cleaned up, stop ends the detached process (and is fine when nothing runs)."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from githubkit import GitHub

TIMEOUT = 60  # each command: the forge answers in well under a second
EXPORT = re.compile(r"^export (RESOLVEFLOW_GITHUB_API_URL|RESOLVEFLOW_GITHUB_TOKEN)=(\S+)$")


def _command() -> list[str]:
    return [sys.executable, "-m", "resolveflow", "sandbox"]


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A private RESOLVEFLOW_HOME; whatever forge a failing test left running on it is ended."""
    yield tmp_path
    for pid in _forges_under(tmp_path):
        os.kill(pid, signal.SIGKILL)


def _forges_under(home: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if b"resolveflow.sandbox.standalone" in argv and os.fsencode(home) in argv:
            found.append(int(entry.name))
    return found


def _sandbox(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env["RESOLVEFLOW_HOME"] = str(home)
    return subprocess.run(
        [*_command(), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def _exports(stdout: str) -> dict[str, str]:
    """stdout is exactly the two lines to eval."""
    lines = stdout.splitlines()
    assert len(lines) == 2, stdout
    matches = [EXPORT.match(line) for line in lines]
    assert all(matches), stdout
    return {m.group(1): m.group(2) for m in matches if m}


def _first_lines(process: subprocess.Popen[str], count: int) -> str:
    """The first ``count`` lines of stdout, read on a thread so that a hang fails in bounded time."""
    assert process.stdout is not None
    stdout = process.stdout
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    return "".join(lines.get(timeout=TIMEOUT) for _ in range(count))


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting to be reaped (its command line is then empty)."""
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except FileNotFoundError:
        return False


def _pid(home: Path) -> int:
    return int(json.loads((home / "sandbox" / "forge.json").read_text())["pid"])


def test_start_serves_the_sample_repository_to_the_printed_token_then_stop_ends_it(
    home: Path,
) -> None:
    started = _sandbox(home, "start")
    assert started.returncode == 0, started.stderr
    exports = _exports(started.stdout)
    url = exports["RESOLVEFLOW_GITHUB_API_URL"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
    pid = _pid(home)
    assert _alive(pid)

    with GitHub(exports["RESOLVEFLOW_GITHUB_TOKEN"], base_url=url) as github:
        assert github.rest.users.get_authenticated().parsed_data.login == (
            "resolveflow-sandbox-bot"
        )
        issues = github.rest.issues.list_for_repo("sandbox", "widgets", state="all").parsed_data
        states = {issue.number: issue.state for issue in issues}
        assert states == {
            1: "open",
            2: "closed",
            3: "closed",
            4: "closed",
            5: "closed",
            6: "open",
            7: "open",
        }
        labels = {
            label.name
            for label in github.rest.issues.list_labels_for_repo("sandbox", "widgets").parsed_data
        }
        assert {"ci-failure", "needs-triage", "bug"} <= labels
        ci_issue = github.rest.issues.get("sandbox", "widgets", 7).parsed_data
        run_id = int(re.search(r"/actions/runs/(\d+)", ci_issue.body or "").group(1))  # type: ignore[union-attr]
        run = github.rest.actions.get_workflow_run("sandbox", "widgets", run_id).parsed_data
        assert run.conclusion == "failure"

    again = _sandbox(home, "start")  # idempotent: the same forge, the same lines
    assert again.returncode == 0, again.stderr
    assert again.stdout == started.stdout and _pid(home) == pid
    assert "already running" in again.stderr

    stopped = _sandbox(home, "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert not _alive(pid), "the sandbox forge is still running after stop"
    assert _forges_under(home) == []
    assert not (home / "sandbox" / "forge.json").exists()

    nothing = _sandbox(home, "stop")
    assert nothing.returncode == 0, nothing.stderr
    assert "no sandbox forge is running" in nothing.stderr


def test_a_stale_state_file_is_removed_and_a_new_forge_started(home: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    dead_pid = int(gone.stdout)
    state = home / "sandbox" / "forge.json"
    state.parent.mkdir(parents=True)
    state.write_text(
        json.dumps(
            {
                "pid": dead_pid,
                "url": "http://127.0.0.1:9",
                "token": "x",
                "login": "x",
                "repository": "sandbox/widgets",
            }
        )
    )
    started = _sandbox(home, "start")
    assert started.returncode == 0, started.stderr
    assert "no longer running" in started.stderr
    assert _exports(started.stdout)["RESOLVEFLOW_GITHUB_API_URL"] != "http://127.0.0.1:9"
    pid = _pid(home)
    assert pid != dead_pid and _alive(pid)
    assert _sandbox(home, "stop").returncode == 0
    assert not _alive(pid)


def test_serve_runs_in_the_foreground_until_sigterm(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env["RESOLVEFLOW_HOME"] = str(home)
    serving = subprocess.Popen(
        [*_command(), "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        exports = _exports(_first_lines(serving, 2))
        with GitHub(
            exports["RESOLVEFLOW_GITHUB_TOKEN"], base_url=exports["RESOLVEFLOW_GITHUB_API_URL"]
        ) as github:
            assert github.rest.issues.get("sandbox", "widgets", 1).parsed_data.state == "open"
        # While it serves, start prints its lines rather than starting a second forge.
        assert _exports(_sandbox(home, "start").stdout) == exports
        serving.send_signal(signal.SIGTERM)
        assert serving.wait(timeout=TIMEOUT) == 0
    finally:
        if serving.poll() is None:
            serving.kill()
            serving.wait(timeout=TIMEOUT)
    assert not (home / "sandbox" / "forge.json").exists()


def test_start_on_a_taken_port_fails_in_one_line_and_leaves_nothing_running(home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = _sandbox(home, "start", "--port", str(port))
    assert started.returncode == 7, started.stderr  # a configuration error (docs/errors.md)
    assert started.stdout == ""  # nothing to eval
    assert "the sandbox forge could not start" in started.stderr
    assert "Traceback" not in started.stderr
    assert _forges_under(home) == []
    assert not (home / "sandbox" / "forge.json").exists()
