"""``resolveflow sandbox start|serve|stop``: the sandbox forge (a fake GitHub on 127.0.0.1, never
GitHub) with the sample repository ``sandbox/widgets``, for trying ResolveFlow offline.

``start`` runs it in a detached process of its own (``resolveflow.sandbox.standalone``), whose
pid, URL and token are in ``$RESOLVEFLOW_HOME/sandbox/forge.json``, and prints exactly two shell
lines on stdout, so that ``eval "$(resolveflow sandbox start)"`` points ResolveFlow at it::

    export RESOLVEFLOW_GITHUB_API_URL=http://127.0.0.1:PORT
    export RESOLVEFLOW_GITHUB_TOKEN=sandbox-service-token

Starting again while it runs prints the same lines for the running one. ``serve`` runs it in the
foreground until Ctrl-C or SIGTERM; ``stop`` stops it. The sample issues, their numbers and the
service account are described in ``resolveflow.sandbox.samples``.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from resolveflow.cli.output import err_console
from resolveflow.errors import ConfigurationError, Conflict, Unavailable
from resolveflow.sandbox import standalone
from resolveflow.sandbox.standalone import STATE_FILE, read_state

sandbox_app = typer.Typer(
    help="The sandbox forge: a fake GitHub on 127.0.0.1 with the sample repository "
    "sandbox/widgets (never GitHub).",
    no_args_is_help=True,
)

START_SECONDS = 30.0  # the forge answers in well under a second; this bounds a stuck start
STOP_SECONDS = 10.0
PortOption = typer.Option(0, "--port", help="Port on 127.0.0.1 (0: any free port).")


def _hint(text: str) -> None:
    """For people, on stderr: stdout holds only the lines to eval."""
    err_console.print(Text(text, style="cyan"))


def _state_dir() -> Path:
    from resolveflow.config import DatabaseSettings

    return DatabaseSettings().home / "sandbox"


@contextmanager
def _locked(state_dir: Path) -> Iterator[None]:
    """One start or stop at a time: two at once would start two forges for one state file."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with (state_dir / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _is_forge(pid: int) -> bool:
    """A live sandbox forge has that pid (not a zombie, not another program that reused it)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc here: whether the pid lives is all we can tell
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return b"resolveflow" in argv and b"sandbox" in argv  # a zombie's command line is empty


def _running(state_dir: Path) -> dict[str, Any] | None:
    """The running forge's state; a state file whose process is gone is removed."""
    state = read_state(state_dir)
    if state is None:
        return None
    pid = state.get("pid")
    if isinstance(pid, int) and _is_forge(pid):
        return state
    (state_dir / STATE_FILE).unlink(missing_ok=True)
    _hint(f"removed the state of a sandbox forge that is no longer running (pid {pid})")
    return None


def _answers(state: dict[str, Any]) -> bool:
    import httpx

    try:
        response = httpx.get(
            f"{state['url']}/user",
            headers={"Authorization": f"token {state['token']}"},
            timeout=2.0,
        )
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and response.json().get("login") == state["login"]


def _spawn(state_dir: Path, port: int) -> dict[str, Any]:
    """Start the forge detached (its own session: a Ctrl-C in this terminal does not reach
    it), and wait until it has written its state and answers as the service account."""
    log_path = state_dir / "forge.log"
    command = [sys.executable, "-m", "resolveflow.sandbox.standalone"]
    command += ["--state-dir", str(state_dir), "--port", str(port)]
    with log_path.open("wb") as log:  # this start's own: its last line says why it failed
        process = subprocess.Popen(
            command,
            cwd=state_dir,  # not the caller's folder, which it would keep busy
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            reason = tail[-1] if tail else f"exit status {process.returncode}"
            if not reason.startswith("the sandbox forge"):  # a crash: its last line, and the log
                reason = f"the sandbox forge did not start: {reason} (see {log_path})"
            raise ConfigurationError(reason)
        state = read_state(state_dir)
        if state is not None and state.get("pid") == process.pid and _answers(state):
            process.returncode = 0  # detached on purpose: no "still running" warning at exit
            return state
        time.sleep(0.05)
    process.kill()
    process.wait(timeout=STOP_SECONDS)
    raise Unavailable(f"the sandbox forge did not answer within {START_SECONDS:.0f} s")


def _print_exports(state: dict[str, Any]) -> None:
    typer.echo(f"export RESOLVEFLOW_GITHUB_API_URL={shlex.quote(str(state['url']))}")
    typer.echo(f"export RESOLVEFLOW_GITHUB_TOKEN={shlex.quote(str(state['token']))}")


@sandbox_app.command("start")
def start(port: int = PortOption) -> None:
    """Start the sandbox forge in the background and print the two `export` lines to eval."""
    state_dir = _state_dir()
    with _locked(state_dir):
        state = _running(state_dir)
        if state is None:
            state = _spawn(state_dir, port)
            _hint(f"sandbox forge (NOT GitHub) started at {state['url']} (pid {state['pid']})")
        else:
            _hint(f"sandbox forge already running at {state['url']} (pid {state['pid']})")
            if port and not str(state["url"]).endswith(f":{port}"):
                _hint(f"--port {port} was not used: stop it first to change the port")
    _hint(f"repository {state['repository']}, posting as @{state['login']}")
    _hint(
        'point this shell at it: eval "$(resolveflow sandbox start)"; stop: resolveflow sandbox stop'
    )
    _print_exports(state)


@sandbox_app.command("serve")
def serve(port: int = PortOption) -> None:
    """Run the sandbox forge in the foreground until Ctrl-C (prints the `export` lines first)."""
    state_dir = _state_dir()
    with _locked(state_dir):
        running = _running(state_dir)
    if running is not None:
        raise Conflict(
            f"a sandbox forge is already running at {running['url']} (pid {running['pid']}); "
            "stop it with `resolveflow sandbox stop`"
        )

    def ready(state: dict[str, Any]) -> None:
        _hint(f"sandbox forge (NOT GitHub) at {state['url']}; Ctrl-C stops it")
        _print_exports(state)
        sys.stdout.flush()

    standalone.serve(state_dir, port, ready=ready)


@sandbox_app.command("stop")
def stop() -> None:
    """Stop the sandbox forge that `start` left running (nothing to do is not an error)."""
    state_dir = _state_dir()
    with _locked(state_dir):
        state = _running(state_dir)
        if state is None:
            _hint("no sandbox forge is running")
            return
        pid = int(state["pid"])
        _end(pid)
        (state_dir / STATE_FILE).unlink(missing_ok=True)
    _hint(f"stopped the sandbox forge at {state['url']} (pid {pid})")


def _end(pid: int) -> None:
    """SIGTERM, then SIGKILL if it has not ended within STOP_SECONDS."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline:
            if not _is_forge(pid):
                return
            time.sleep(0.05)
    raise Unavailable(f"the sandbox forge (pid {pid}) did not stop")
