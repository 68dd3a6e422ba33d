"""The raw messages of a path ``mail import`` was given: one ``.eml`` file, a folder of them
(recursively, in name order), an mbox file or a Maildir (``cur/`` and ``new/``).

Inside a folder nothing is followed or opened that is not a regular file: a symbolic link (to
``/dev/zero``, or out of the folder) or a device, FIFO or socket is skipped with its reason, and
a file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` (a FIFO neither
blocks nor is read). No read takes more than the size bound and one byte, so a file that grows
while it is read is skipped as too large. The path given itself may be a link (the operator
named it), but it too must be a regular file or a folder. An mbox is split here, line by line
with each line read in bounded pieces, so one huge message costs no more than the bound.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from resolveflow.mail.bounds import UnreadableMessage

_NOT_FOLLOWED = "a symbolic link, not followed"


def raw_messages(
    path: Path, form: str, max_bytes: int, skipped: list[tuple[str, str]]
) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) for each message of ``path`` in ``form`` ("eml", "eml-folder", "mbox",
    "maildir"); a file that cannot be read goes to ``skipped`` as (name, reason)."""
    if form == "mbox":
        yield from _mbox(path, max_bytes, skipped)
        return
    if form == "eml":
        files = [(str(path), path, True)]
    elif form == "eml-folder":
        files = [(str(file), file, False) for file in _eml_files(path, skipped)]
    else:
        files = [(f"{path}#{n}", file, False) for n, file in enumerate(_maildir(path), start=1)]
    for name, file, follow in files:
        try:
            yield name, read_file(file, max_bytes, follow=follow)
        except UnreadableMessage as exc:
            skipped.append((name, str(exc)))


def read_file(file: Path, max_bytes: int, *, follow: bool = False) -> bytes:
    """At most ``max_bytes`` of a regular file, or ``UnreadableMessage``; a link is refused
    unless ``follow``."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        if not follow and file.is_symlink():
            raise UnreadableMessage(f"{file}: {_NOT_FOLLOWED}")
        fd = os.open(file, flags)
    except OSError as exc:
        raise UnreadableMessage(f"{file}: cannot read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableMessage(f"{file}: not a regular file")
        if info.st_size > max_bytes:
            raise UnreadableMessage(f"{file}: {info.st_size} bytes is larger than {max_bytes}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise UnreadableMessage(f"{file}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew after the fstat
        raise UnreadableMessage(f"{file}: larger than {max_bytes} bytes")
    return data


def _eml_files(root: Path, skipped: list[tuple[str, str]]) -> list[Path]:
    """The ``*.eml`` files under ``root`` in path order, without following a link; a link that
    would have been read (named ``*.eml`` or to a folder) is skipped with its reason."""
    found: list[Path] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            skipped.append((str(folder), f"{folder}: cannot read ({exc.strerror})"))
            continue
        for entry in entries:
            where = Path(entry.path)
            if entry.is_symlink():
                if entry.name.endswith(".eml") or where.is_dir():
                    skipped.append((entry.path, f"{entry.path}: {_NOT_FOLLOWED}"))
            elif entry.is_dir(follow_symlinks=False):
                pending.append(where)
            elif entry.name.endswith(".eml"):
                found.append(where)  # a FIFO or device too: read_file refuses it with a reason
    return sorted(found)


def _maildir(root: Path) -> list[Path]:
    """The message files of a Maildir in key order, as ``mailbox.Maildir`` lists them (``new/``
    and ``cur/``, no dot files; the key is the name before its ``:`` info)."""
    entries: dict[str, Path] = {}
    for sub in ("new", "cur"):
        for name in os.listdir(root / sub):
            if not name.startswith("."):
                entries[name.split(":")[0]] = root / sub / name
    return [entries[key] for key in sorted(entries)]


def _mbox(
    path: Path, max_bytes: int, skipped: list[tuple[str, str]]
) -> Iterator[tuple[str, bytes]]:
    """Each message of an mbox file (a line starting ``From `` begins one; the line itself and
    the blank line before the next are not part of it), as ``mailbox.mbox.get_bytes``."""
    number, lines, size = 0, list[bytes](), 0
    at_line_start = True
    with path.open("rb") as handle:
        while piece := handle.readline(max_bytes + 1):
            if at_line_start and piece.startswith(b"From "):
                if number:
                    yield from _finished(f"{path}#{number}", lines, size, max_bytes, skipped)
                number, lines, size = number + 1, [], 0
            elif number:
                size += len(piece)
                if size <= max_bytes:
                    lines.append(piece)
                else:
                    lines = []  # too large: counted to the end, not kept
            at_line_start = piece.endswith(b"\n")
    if number:
        yield from _finished(f"{path}#{number}", lines, size, max_bytes, skipped)


def _finished(
    name: str, lines: list[bytes], size: int, max_bytes: int, skipped: list[tuple[str, str]]
) -> Iterator[tuple[str, bytes]]:
    if size > max_bytes:
        skipped.append((name, f"{name}: {size} bytes is larger than {max_bytes}"))
        return
    if lines and lines[-1] in (b"\n", b"\r\n"):
        lines = lines[:-1]
    yield name, b"".join(lines)
