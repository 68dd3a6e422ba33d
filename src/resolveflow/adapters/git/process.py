"""Running the git CLI safely: argument lists only, a timeout on every call, never the network.

Every call is ``git --no-pager -C CLONE -c ... COMMAND ARGS``: no shell, nothing interpolated into a
string, options that make a read of a possibly hostile clone harmless (no external diff or textconv
programs, no fsmonitor hook), and two guards against the network: a partial clone would otherwise
fetch a missing object from its promisor remote on demand. ``GIT_NO_LAZY_FETCH=1`` forbids that
where git knows the variable (2.39.4 and later) and ``-c protocol.allow=never`` refuses every
transport on any version, so the command fails instead: the refine step reads local clones only,
and a missing object becomes a warning (``ObjectMissing``).
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from resolveflow.adapters.git.errors import (
    CloneMissing,
    GitCommandFailed,
    GitNotInstalled,
    GitTimeout,
    ObjectMissing,
)
from resolveflow.errors import ResolveFlowError, one_line

_CONFIG = (
    "protocol.allow=never",  # no transport at all: a lazy fetch fails instead of reaching out
    "core.quotepath=off",  # paths as they are (we parse NUL-separated output anyway)
    "core.fsmonitor=false",  # a clone's own config must not start a program
    "log.showSignature=false",  # would add lines to our parsed formats
    "color.ui=never",
    "diff.noprefix=false",  # keep "a/" "b/" in excerpts whatever the user's config says
)
_MISSING = (
    "bad object",
    "unable to read",
    "could not read",
    "could not fetch",  # "... from promisor remote": the object is not in the partial clone
    "not allowed",  # "transport 'file' not allowed": a lazy fetch was attempted and refused
    "lazy fetching disabled",
    "not a valid object name",
    "unknown revision",
    "bad revision",
    "invalid object",
    "missing blob",
    "missing tree",
    "missing commit",
    "not a tree object",
)
_NOT_A_CLONE = ("not a git repository", "cannot change to")
_STDERR_KEPT = 64 * 1024


def git_environment(clone: Path) -> dict[str, str]:
    """The caller's environment without its ``GIT_*`` variables (a ``GIT_DIR`` would point git
    elsewhere), plus: C locale (messages we can classify), no prompts, no lazy fetch (older git
    ignores the variable; ``protocol.allow=never`` still holds), no optional index locks, and a
    ceiling at the clone's parent so a folder inside another repository is not taken for a clone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        LC_ALL="C",
        GIT_TERMINAL_PROMPT="0",
        GIT_NO_LAZY_FETCH="1",
        GIT_OPTIONAL_LOCKS="0",
        GIT_CEILING_DIRECTORIES=str(Path(os.path.abspath(clone)).parent),
    )
    return env


class GitProcess:
    """Runs git commands in one clone; turns every failure into an error of ``errors.py``."""

    def __init__(self, clone: Path, *, timeout: float, executable: str) -> None:
        self.clone = clone
        self.timeout = timeout
        self.executable = executable
        self._env = git_environment(clone)

    def command(self, args: Sequence[str]) -> list[str]:
        config = [part for setting in _CONFIG for part in ("-c", setting)]
        return [self.executable, "--no-pager", "-C", str(self.clone), *config, *args]

    def run(
        self, args: Sequence[str], *, stdin: bytes | None = None, ok: Sequence[int] = (0,)
    ) -> bytes:
        """The command's whole stdout; a return code outside ``ok`` raises."""
        try:
            done = subprocess.run(
                self.command(args),
                input=stdin,
                capture_output=True,
                timeout=self.timeout,
                env=self._env,
                check=False,
                stdin=None if stdin is not None else subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:  # run() has killed and reaped git already
            raise self._timeout(args) from None
        except OSError as exc:
            raise self._not_started(exc) from None
        if done.returncode not in ok:
            raise self.failure(args, done.stderr)
        return done.stdout

    def head_of_output(self, args: Sequence[str], limit: int) -> tuple[bytes, bool]:
        """At most ``limit`` bytes of stdout, and whether there was more. git is stopped once the
        limit is passed, so a huge diff never sits in memory whole."""
        try:
            proc = subprocess.Popen(
                self.command(args),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._env,
            )
        except OSError as exc:
            raise self._not_started(exc) from None
        try:
            out, err, more = self._read(proc, limit, time.monotonic() + self.timeout, args)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        if not more and proc.returncode != 0:
            raise self.failure(args, err)
        return out[:limit], more

    def _read(
        self, proc: subprocess.Popen[bytes], limit: int, deadline: float, args: Sequence[str]
    ) -> tuple[bytes, bytes, bool]:
        assert proc.stdout is not None and proc.stderr is not None
        out, err = bytearray(), bytearray()
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ, out)
            selector.register(proc.stderr, selectors.EVENT_READ, err)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._timeout(args)
                for key, _ in selector.select(left):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif key.data is out or len(err) < _STDERR_KEPT:
                        key.data.extend(chunk)
                if len(out) > limit:
                    return bytes(out), bytes(err), True
        return bytes(out), bytes(err), False

    def failure(self, args: Sequence[str], stderr: bytes) -> ResolveFlowError:
        """The error for a command that exited non-zero, from what it said on stderr."""
        lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        text = "\n".join(lines).lower()
        name = f"git {args[0]}" if args else "git"
        if any(marker in text for marker in _NOT_A_CLONE):
            return CloneMissing(f"{self.clone} is not a git repository", clone=str(self.clone))
        if any(marker in text for marker in _MISSING):
            # The most telling line: which object was missing, not "transport 'file' not allowed".
            line = next((ln for ln in lines if "could not fetch" in ln.lower()), lines[-1])
            return ObjectMissing(
                one_line(f"{name}: an object is missing from the clone {self.clone}: {line}"),
                clone=str(self.clone),
            )
        first = lines[0] if lines else "no message"
        return GitCommandFailed(one_line(f"{name} failed in {self.clone}: {first}"))

    def _timeout(self, args: Sequence[str]) -> GitTimeout:
        name = f"git {args[0]}" if args else "git"
        return GitTimeout(
            f"{name} in {self.clone} took longer than {self.timeout:g} s and was stopped"
        )

    def _not_started(self, exc: OSError) -> ResolveFlowError:
        # -C, not cwd=, so FileNotFoundError can only mean the executable itself is missing.
        if isinstance(exc, FileNotFoundError):
            return GitNotInstalled(f"git is not installed (looked for {self.executable!r} on PATH)")
        return GitNotInstalled(
            one_line(f"could not run {self.executable!r}: {exc.strerror or exc}")
        )
