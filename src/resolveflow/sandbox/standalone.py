"""The seeded sandbox forge as a process of its own: what ``resolveflow sandbox`` starts.

``python -m resolveflow.sandbox.standalone --state-dir DIR [--port P]`` serves the forge with the
sample repository (``samples``), writes ``DIR/forge.json`` (pid, URL, token, login) once it
answers, and serves until SIGTERM or Ctrl-C; then it stops the server and removes the file, if the
file is still its own. It imports only the sandbox, so it starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resolveflow.sandbox import samples
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth

STATE_FILE = "forge.json"


def read_state(state_dir: Path) -> dict[str, Any] | None:
    """What the running forge wrote, or ``None`` (no file, or one cut short)."""
    try:
        found = json.loads((state_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _write_state(state_dir: Path, state: dict[str, Any]) -> None:
    """Atomically: a reader sees the whole file or none."""
    state_dir.mkdir(parents=True, exist_ok=True)
    partial = state_dir / f".{STATE_FILE}.{os.getpid()}"
    partial.write_text(json.dumps(state), encoding="utf-8")
    partial.replace(state_dir / STATE_FILE)


def _remove_own_state(state_dir: Path) -> None:
    found = read_state(state_dir)
    if found is not None and found.get("pid") == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            (state_dir / STATE_FILE).unlink()


def serve(
    state_dir: Path | None, port: int = 0, *, ready: Callable[[dict[str, Any]], None]
) -> None:
    """Serve the seeded forge until SIGTERM or Ctrl-C; ``ready`` gets the state once it answers."""
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with FakeGitHubWithOAuth(port, default_login=samples.SERVICE_LOGIN) as fake:
            samples.seed(fake)
            state = {
                "pid": os.getpid(),
                "url": fake.url,
                "token": samples.SERVICE_TOKEN,
                "login": samples.SERVICE_LOGIN,
                "repository": samples.REPO,
            }
            try:
                if state_dir is not None:
                    _write_state(state_dir, state)
                ready(state)
                with contextlib.suppress(KeyboardInterrupt):
                    threading.Event().wait()
            finally:
                if state_dir is not None:
                    _remove_own_state(state_dir)
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the seeded sandbox forge on 127.0.0.1.")
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        with contextlib.suppress(KeyboardInterrupt):  # a stop asked for before serving began
            serve(args.state_dir, args.port, ready=lambda state: None)
    except OSError as exc:  # the port is taken, or the folder cannot be written
        print(f"the sandbox forge could not start: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
