"""The extraction worker process: ``python -m resolveflow.retrieval.extraction_worker``.

Started and fed by ``retrieval.extraction``, never by hand. It imports the loaders once, then
answers one job at a time over its standard input and output: a JSON header frame and a bytes
frame in (each an 8-byte big-endian length, then the bytes), one JSON frame out. Each job runs
under the memory ceiling it names (``RLIMIT_AS``); the parent kills the process at the job's
deadline. A job that ran out of memory answers so and the worker exits: its heap is not reused.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import struct
import sys
from dataclasses import asdict
from typing import Any

_LENGTH = struct.Struct(">Q")


def read_frame(fd: int) -> bytes | None:
    """One frame from ``fd``, or None at the end of input (the parent went away)."""
    head = _read_exact(fd, _LENGTH.size)
    if head is None:
        return None
    (size,) = _LENGTH.unpack(head)
    return _read_exact(fd, size)


def write_frame(fd: int, payload: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _run(header: dict[str, Any], data: bytes) -> dict[str, Any]:
    from resolveflow.errors import InvalidInput
    from resolveflow.retrieval import loaders
    from resolveflow.retrieval.loaders import TextLimits, load_document

    # The refusals the parent raises again, nearest first (a private subclass answers as its base).
    kinds = (loaders.DocumentTooLarge, loaders.UnsupportedMediaType, loaders.UnreadableDocument)

    path = str(header["path"])
    try:
        loaded = load_document(
            path,
            data,
            str(header["media_type"]),
            max_bytes=int(header["max_bytes"]),
            limits=TextLimits(**header["limits"]),
        )
    except InvalidInput as exc:
        kind = next((k.__name__ for k in kinds if isinstance(exc, k)), "InvalidInput")
        return {"error": {"kind": kind, "message": exc.message}}
    except RecursionError:
        return {"error": {"kind": "UnreadableDocument", "message": f"{path}: nested too deeply"}}
    except MemoryError:
        raise
    except Exception as exc:  # a parser's own failure on a crafted file: that file's reason
        reason = " ".join(str(exc).split())[:120]
        return {"error": {"kind": "Unexpected", "type": type(exc).__name__, "message": reason}}
    return {"document": asdict(loaded)}


def _job(header: dict[str, Any], data: bytes) -> dict[str, Any]:
    limit = int(header.get("memory_bytes") or 0)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        reply = _run(header, data)
    except MemoryError:
        reply = {"error": {"kind": "MemoryError", "message": ""}, "retire": True}
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    reply["maxrss_kb"] = _peak_kb()
    return reply


def _peak_kb() -> int:
    """This process's peak resident memory. Not ``ru_maxrss``: Linux keeps that across exec, so
    a worker started by a large parent reports the parent's size (the fork's copy) as its own."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:  # no /proc (not Linux)
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> None:
    # The protocol has the pipes to itself: anything a library prints goes to stderr instead.
    inbound, outbound = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    # Ctrl-C reaches the whole process group: the parent handles it and closes our input.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.setrecursionlimit(2000)  # RecursionError stays an answer, never a crash of the C stack
    import resolveflow.retrieval.html_text
    import resolveflow.retrieval.loaders
    import resolveflow.retrieval.pdf_text  # noqa: F401 (imported once, before any deadline)

    write_frame(outbound, json.dumps({"ready": os.getpid()}).encode())
    while True:
        header_bytes = read_frame(inbound)
        data = read_frame(inbound) if header_bytes is not None else None
        if header_bytes is None or data is None:
            return
        reply = _job(json.loads(header_bytes), data)
        del data
        write_frame(outbound, json.dumps(reply).encode())
        if reply.get("retire"):
            return


if __name__ == "__main__":
    main()
