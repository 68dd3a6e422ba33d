"""Reading documents from files: the JSONL corpus format and a folder of docs.

JSONL (see shared/data/README.md): one object a line with ``id``, ``title``, ``body``,
``created_at``, ``closed_at``, ``state``, ``labels``, ``url`` and optionally ``kind``
(issue | pull), ``merged_at``, ``resolution``. A docs folder holds ``*.md``, ``*.markdown``,
``*.txt``, ``*.html``, ``*.htm`` and ``*.pdf`` files (converted by ``loaders``); front matter
``runbook: TAG`` marks a trusted runbook. A file that cannot be read is skipped with its reason
and the folder goes on.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from resolveflow.errors import InvalidInput
from resolveflow.retrieval import loaders
from resolveflow.retrieval.extraction import ExtractionLimits, shared_extractor
from resolveflow.retrieval.loaders import LoadedDocument
from resolveflow.retrieval.records import SourceDocument

DOC_SUFFIXES = tuple(loaders.SUFFIXES)
DEFAULT_MAX_BYTES = loaders.DEFAULT_MAX_BYTES
_Read = tuple[bytes, datetime]


def parse_time(value: Any, *, where: str) -> datetime | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{where}: a time must be an ISO 8601 string, got {value!r}")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{where}: {value!r} is not an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def corpus_record(record: Any, source: str, *, where: str) -> SourceDocument:
    if not isinstance(record, dict):
        raise InvalidInput(f"{where}: expected a JSON object")
    external_id = record.get("id")
    if not isinstance(external_id, str | int) or str(external_id).strip() == "":
        raise InvalidInput(f"{where}: missing id")
    labels = record.get("labels") or []
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise InvalidInput(f"{where}: labels must be a list of strings")
    kind = record.get("kind") or "issue"
    state = record.get("state")
    if kind == "pull" and record.get("merged_at"):
        state = "merged"
    return SourceDocument(
        source=source,
        external_id=str(external_id).strip(),
        kind=str(kind),
        title=str(record.get("title") or ""),
        body=str(record.get("body") or ""),
        url=record.get("url") or None,
        state=str(state) if state is not None else None,
        labels=tuple(labels),
        created_at=parse_time(record.get("created_at"), where=where),
        closed_at=parse_time(record.get("closed_at"), where=where),
    )


def read_corpus(path: Path, source: str) -> Iterator[SourceDocument]:
    """Documents of a JSONL corpus file, in file order; a bad line stops with its number."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path.name} line {number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{where}: not JSON ({exc.msg})") from None
            yield corpus_record(record, source, where=where)


def read_pairs(path: Path) -> list[tuple[str, str]]:
    """The pairs of a ``duplicates.tsv`` (``id_a<TAB>id_b``, a header line allowed); one error
    naming a bad line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    pairs: list[tuple[str, str]] = []
    for number, line in enumerate(lines, start=1):
        fields = line.strip().split("\t")
        if not line.strip() or (number == 1 and fields[0] == "id_a"):
            continue
        if len(fields) != 2:
            raise InvalidInput(f"{path.name} line {number}: expected two tab-separated ids")
        pairs.append((fields[0].strip(), fields[1].strip()))
    return pairs


def source_document(
    loaded: LoadedDocument, source: str, modified: datetime | None = None
) -> SourceDocument:
    """The index's view of a loaded file: a runbook when its front matter names one."""
    return SourceDocument(
        source=source,
        external_id=loaded.path,
        kind="runbook" if loaded.runbook_tag else "doc",
        title=loaded.title,
        body=loaded.body,
        runbook_tag=loaded.runbook_tag,
        runbook_triggers=loaded.triggers,
        created_at=parse_time(loaded.created_at, where=loaded.path) or modified,
        updated_at=modified,
    )


@dataclass
class DocsFolder:
    """The documents of a folder, in path order. Iterating reads them; afterwards ``seen`` holds
    every supported file's external id (read or not) and ``skipped`` each unreadable one with
    its one-line reason.

    Only the folder's own regular files are read: a symbolic link (to a file or a folder, inside
    the folder or out of it) is skipped with its reason and never followed, and neither is a
    device, a pipe or a socket. Each file is opened component by component without following
    links (``O_NOFOLLOW``), so a link swapped in while the folder is read is refused too. A
    skipped link is not ``seen``: ``--prune`` removes what an earlier run read through one.
    Text is extracted by ``retrieval.extraction`` (worker processes, ``limits``; without
    ``limits``, the defaults with ``max_bytes``).
    """

    root: Path
    source: str
    max_bytes: int = DEFAULT_MAX_BYTES
    limits: ExtractionLimits | None = None
    seen: set[str] = field(default_factory=set)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.root.is_dir():
            raise InvalidInput(f"{self.root} is not a directory")

    def __iter__(self) -> Iterator[SourceDocument]:
        limits = self.limits or ExtractionLimits(max_bytes=self.max_bytes)
        extractor = shared_extractor(limits.workers)
        root = self.root.resolve()  # the folder named may itself be a link: the one followed
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for parts, link in _entries(root):
                name = "/".join(parts)
                try:
                    if link:
                        raise loaders.UnreadableDocument(
                            f"{_shown(name)}: a symbolic link, not followed"
                        )
                    _check_name(name)
                    self.seen.add(name)
                    data, modified = _read_inside(root_fd, parts, name, limits.max_bytes)
                    media_type = loaders.media_type_for(name)
                    loaded = extractor.extract(name, data, media_type, limits)
                    del data
                    yield source_document(loaded, self.source, modified)
                except InvalidInput as exc:
                    self.skipped.append((_shown(name), exc.message))
        finally:
            os.close(root_fd)


def _entries(root: Path) -> list[tuple[tuple[str, ...], bool]]:
    """Each supported file under ``root`` and each symbolic link to one or to a folder, as its
    path's parts and whether it is a link, in path order; no link is followed."""
    found: list[tuple[tuple[str, ...], bool]] = []
    for top, dirs, files, top_fd in os.fwalk(root, follow_symlinks=False):
        base = Path(top).relative_to(root).parts
        for name in [*dirs, *files]:
            try:
                mode = os.stat(name, dir_fd=top_fd, follow_symlinks=False).st_mode
            except OSError:
                continue  # gone since it was listed
            document = PurePosixPath(name).suffix.lower() in DOC_SUFFIXES
            if stat.S_ISLNK(mode) and (document or name in dirs):
                found.append(((*base, name), True))
            elif document and not stat.S_ISDIR(mode):
                found.append(((*base, name), False))
    return sorted(found)


def _read_inside(root_fd: int, parts: tuple[str, ...], name: str, max_bytes: int) -> _Read:
    """The bytes and modification time of the regular file at ``parts`` under the folder."""
    opened: list[int] = []
    try:
        fd = root_fd
        for part in parts[:-1]:
            fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            opened.append(fd)
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
        fd = os.open(parts[-1], flags, dir_fd=fd)
        opened.append(fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise loaders.UnreadableDocument(
                f"{name}: not a regular file (a device, a pipe or a socket); not read"
            )
        loaders.check_size(name, info.st_size, max_bytes)  # before reading a huge file at all
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(max_bytes + 1)  # it may have grown since
        loaders.check_size(name, len(data), max_bytes)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link put where a file or folder was listed
            raise loaders.UnreadableDocument(f"{name}: a symbolic link, not followed") from None
        raise loaders.UnreadableDocument(f"{name}: cannot read ({exc.strerror or exc})") from None
    finally:
        for opened_fd in opened:
            os.close(opened_fd)
    return data, datetime.fromtimestamp(info.st_mtime, tz=UTC)


def _check_name(name: str) -> None:
    """A file name that is not UTF-8 reads as lone surrogates, which Postgres cannot store."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise loaders.UnreadableDocument(
            f"{_shown(name)}: the file name is not UTF-8; rename the file"
        ) from None


def _shown(name: str) -> str:
    """The name as printable text: undecodable bytes as ``\\xff``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def read_docs_dir(
    root: Path, source: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[SourceDocument]:
    """The readable documents of a folder (unreadable files are left out; ``DocsFolder`` says
    which and why)."""
    yield from DocsFolder(root, source, max_bytes)


def folder_files(root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[tuple[str, bytes]]:
    """Each supported file of the folder that ``DocsFolder`` would read, by path, with its bytes
    (unread: its reason instead); links are named, never followed. Nothing is extracted."""
    if not root.is_dir():
        raise InvalidInput(f"{root} is not a directory")
    root = root.resolve()
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for parts, link in _entries(root):
            name = "/".join(parts)
            if link:
                yield _shown(name), b"link"
                continue
            try:
                yield _shown(name), _read_inside(root_fd, parts, name, max_bytes)[0]
            except InvalidInput as exc:
                yield _shown(name), exc.message.encode()
    finally:
        os.close(root_fd)
