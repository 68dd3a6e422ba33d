"""Untrusted documents are converted in worker processes, bounded in time, memory and number.

pypdf and BeautifulSoup are pure Python: a hostile file keeps one busy for minutes while holding
the GIL, and a thread cannot be stopped. So ``Extractor.extract`` (the one entry point of
``index docs`` and ``POST /api/v1/documents``) hands the bytes to a worker process
(``extraction_worker``) and waits for its answer until a wall-clock deadline, then kills it. The
worker runs each job under a memory ceiling; at most ``workers`` jobs run at once, a caller waits
for a free worker no longer than the deadline. Workers start once (about a second: the imports)
and are reused, retired after ``_JOBS_PER_WORKER`` jobs or any failure, and exit when their
parent does (their input closes).

Every way a job can end is one line: the document, the loader's own refusal, a deadline or
memory ceiling passed (``DocumentTooLarge``), the worker gone (``UnreadableDocument``), or no
worker free or startable (``ExtractorUnavailable``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import select
import struct
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from resolveflow.errors import InvalidInput
from resolveflow.retrieval.document_bounds import (
    DEFAULT_MAX_BYTES,
    DocumentTooLarge,
    ExtractorUnavailable,
    TextLimits,
    UnreadableDocument,
    UnsupportedMediaType,
)
from resolveflow.retrieval.loaders import MEDIA_TYPES, LoadedDocument, Section, check_size

logger = logging.getLogger(__name__)

_WORKER = "resolveflow.retrieval.extraction_worker"
_LENGTH = struct.Struct(">Q")
_START_SECONDS = 60.0  # the imports, on a loaded machine
_JOBS_PER_WORKER = 200  # then a fresh process: a long-lived parser heap only grows
_EXIT_SECONDS = 2.0  # between a worker's output closing and its exit being seen
# What a worker inherits of the environment: enough to start Python, none of our secrets.
_CHILD_ENV = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
_ERRORS: dict[str, type[InvalidInput]] = {
    cls.__name__: cls
    for cls in (InvalidInput, UnreadableDocument, DocumentTooLarge, UnsupportedMediaType)
}


@dataclass(frozen=True)
class ExtractionLimits:
    """The settings ``RESOLVEFLOW_DOCUMENT_*`` (docs/configuration.md)."""

    max_bytes: int = DEFAULT_MAX_BYTES
    text: TextLimits = field(default_factory=TextLimits)
    timeout_seconds: float = 30.0  # RESOLVEFLOW_DOCUMENT_EXTRACT_TIMEOUT_SECONDS
    memory_bytes: int = 1024 * 1024 * 1024  # RESOLVEFLOW_DOCUMENT_EXTRACT_MEMORY_BYTES
    workers: int = 2  # RESOLVEFLOW_DOCUMENT_EXTRACT_WORKERS


class _Timeout(DocumentTooLarge):
    """The job passed its deadline (caught here, reported with the path)."""


class _Gone(UnreadableDocument):
    """The worker went away or answered what no job asks for (caught here, reported)."""


class _Worker:
    """One worker process and its two pipes."""

    def __init__(self) -> None:
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", _WORKER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                bufsize=0,
                close_fds=True,
                env={name: os.environ[name] for name in _CHILD_ENV if name in os.environ},
            )
        except OSError as exc:
            raise ExtractorUnavailable(f"the document extractor could not start: {exc}") from None
        self.jobs = 0
        self.maxrss_bytes = 0  # known once it has ended (exit_status)
        try:
            _read_frame(self._out, time.monotonic() + _START_SECONDS, 4096)
        except (_Timeout, _Gone):
            self.kill()
            raise ExtractorUnavailable("the document extractor did not start") from None

    @property
    def _out(self) -> int:
        assert self._proc.stdout is not None
        return self._proc.stdout.fileno()

    def run(self, header: dict[str, Any], data: bytes, deadline: float, cap: int) -> Any:
        assert self._proc.stdin is not None
        self.jobs += 1
        try:
            for payload in (json.dumps(header).encode(), data):
                view = memoryview(_LENGTH.pack(len(payload)) + payload)
                while view:
                    view = view[self._proc.stdin.write(view) or 0 :]
        except OSError:  # BrokenPipeError: it died while idle
            raise _Gone from None
        return json.loads(_read_frame(self._out, deadline, cap))

    def exit_status(self) -> int | None:
        """How it ended (a negative signal number, or its exit code); None while it runs. Its
        output closing comes a moment before its exit is seen: wait that moment. Reaped here
        with its resource usage, so that a worker killed by its ceiling still reports how large
        it grew (``maxrss_bytes``)."""
        if self._proc.returncode is not None:
            return self._proc.returncode
        deadline = time.monotonic() + _EXIT_SECONDS
        while True:
            try:
                pid, status, usage = os.wait4(self._proc.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: Popen knows how it ended
                return self._proc.poll()
            if pid:
                self.maxrss_bytes = usage.ru_maxrss * 1024
                self._proc.returncode = os.waitstatus_to_exitcode(status)
                return self._proc.returncode
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def kill(self) -> None:
        self._proc.kill()
        self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                pipe.close()

    def close(self) -> None:
        """Let it exit by itself (its input ends); kill it if it does not."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)
        self.kill()


def _read_frame(fd: int, deadline: float, cap: int) -> bytes:
    head = _read_exact(fd, _LENGTH.size, deadline)
    (size,) = _LENGTH.unpack(head)
    if size > cap:
        raise _Gone  # not an answer we asked for
    return _read_exact(fd, size, deadline)


def _read_exact(fd: int, size: int, deadline: float) -> bytes:
    # poll, not select: a web process with a thousand connections has descriptors past select's
    # limit of 1024.
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    parts = bytearray()
    while len(parts) < size:
        left = deadline - time.monotonic()
        if left <= 0 or not waiting.poll(max(1, int(left * 1000))):
            raise _Timeout
        chunk = os.read(fd, min(size - len(parts), 1 << 20))
        if not chunk:
            raise _Gone
        parts += chunk
    return bytes(parts)


class Extractor:
    """A pool of at most ``workers`` worker processes, started as needed and reused."""

    def __init__(self, workers: int) -> None:
        self._slots = threading.BoundedSemaphore(workers)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self.peak_rss_bytes = 0  # the largest any worker grew to (measured by the tests)

    def extract(
        self, path: str, data: bytes, media_type: str, limits: ExtractionLimits
    ) -> LoadedDocument:
        """The document in ``data``, or one line saying why not (see the module's docstring)."""
        check_size(path, len(data), limits.max_bytes)  # no worker for what is refused anyway
        if media_type not in MEDIA_TYPES:
            raise UnsupportedMediaType(f"{path}: media type {media_type!r} is not supported")
        if not self._slots.acquire(timeout=limits.timeout_seconds):
            raise ExtractorUnavailable(
                "every document extractor is busy; try again shortly "
                "(RESOLVEFLOW_DOCUMENT_EXTRACT_WORKERS)"
            )
        try:
            reply = self._run(path, data, media_type, limits)
        finally:
            self._slots.release()
        self.peak_rss_bytes = max(self.peak_rss_bytes, int(reply.get("maxrss_kb", 0)) * 1024)
        return _answer(path, reply, limits)

    def _run(self, path: str, data: bytes, media_type: str, limits: ExtractionLimits) -> Any:
        header = {
            "path": path,
            "media_type": media_type,
            "max_bytes": limits.max_bytes,
            "limits": asdict(limits.text),
            "memory_bytes": limits.memory_bytes,
        }
        # JSON escapes a character in at most 12 bytes; the body is sent twice (and sections).
        cap = 32 * limits.text.max_chars + (1 << 20)
        for attempt in (1, 2):
            worker, reused = self._take()
            deadline = time.monotonic() + limits.timeout_seconds
            try:
                reply = worker.run(header, data, deadline, cap)
            except _Timeout:
                worker.kill()
                raise DocumentTooLarge(
                    f"{path}: extracting its text took longer than {limits.timeout_seconds:g} s "
                    "(RESOLVEFLOW_DOCUMENT_EXTRACT_TIMEOUT_SECONDS)"
                ) from None
            except _Gone:
                status = worker.exit_status()
                worker.kill()
                if reused and attempt == 1:
                    continue  # it had died while idle: once more with a fresh one
                if limits.memory_bytes and status not in (None, 0):
                    # Past its RLIMIT_AS a parser's failed allocation in C, or CPython running
                    # out while it builds the MemoryError, ends the process (SIGABRT, SIGSEGV)
                    # instead of raising: the ceiling, all the same (1 run in 4 under load).
                    logger.info("extraction worker died", extra={"path": path, "status": status})
                    self.peak_rss_bytes = max(self.peak_rss_bytes, worker.maxrss_bytes)
                    raise _too_much_memory(path, limits) from None
                raise UnreadableDocument(f"{path}: the extraction stopped unexpectedly") from None
            self._give_back(worker, retire=bool(reply.get("retire")))
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def _take(self) -> tuple[_Worker, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return _Worker(), False

    def _give_back(self, worker: _Worker, *, retire: bool) -> None:
        if retire or worker.jobs >= _JOBS_PER_WORKER:
            worker.close()
            return
        with self._lock:
            self._idle.append(worker)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()


def _too_much_memory(path: str, limits: ExtractionLimits) -> DocumentTooLarge:
    return DocumentTooLarge(
        f"{path}: extracting its text needs more than {limits.memory_bytes // 2**20} MB "
        "of memory (RESOLVEFLOW_DOCUMENT_EXTRACT_MEMORY_BYTES)"
    )


def _answer(path: str, reply: Any, limits: ExtractionLimits) -> LoadedDocument:
    if "document" in reply:
        return _document(reply["document"])
    error = reply["error"]
    kind, message = str(error["kind"]), str(error["message"])
    if kind == "MemoryError":
        raise _too_much_memory(path, limits)
    if kind in _ERRORS:
        raise _ERRORS[kind](message)
    # Not one of our refusals: a parser failed on this file. Its reason, and a trace in the log.
    logger.warning("document parser failed", extra={"path": path, "error": error.get("type")})
    raise UnreadableDocument(f"{path}: could not be read ({error.get('type')}: {message})")


def _document(raw: dict[str, Any]) -> LoadedDocument:
    return LoadedDocument(
        path=str(raw["path"]),
        media_type=str(raw["media_type"]),
        title=str(raw["title"]),
        body=str(raw["body"]),
        sections=tuple(
            Section(str(s["heading"]), int(s["level"]), str(s["text"]), s["page"])
            for s in raw["sections"]
        ),
        runbook_tag=raw["runbook_tag"],
        created_at=raw["created_at"],
        triggers=tuple(str(t) for t in raw["triggers"]),
    )


_shared: dict[int, Extractor] = {}
_shared_lock = threading.Lock()


def shared_extractor(workers: int) -> Extractor:
    """The process's pool of ``workers`` workers (the web app's requests and a CLI command share
    it); closed when the process exits."""
    with _shared_lock:
        if workers not in _shared:
            _shared[workers] = Extractor(workers)
        return _shared[workers]


@atexit.register
def _close_shared() -> None:
    with _shared_lock:
        pools = list(_shared.values())
    for pool in pools:
        pool.close()


def extract(path: str, data: bytes, media_type: str, limits: ExtractionLimits) -> LoadedDocument:
    """``Extractor.extract`` on the process's shared pool for ``limits.workers``."""
    return shared_extractor(limits.workers).extract(path, data, media_type, limits)
