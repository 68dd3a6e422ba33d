"""Reading documents from files: the JSONL corpus format and a folder of docs.

JSONL (see shared/data/README.md): one object a line with ``id``, ``title``, ``body``,
``created_at``, ``closed_at``, ``state``, ``labels``, ``url`` and optionally ``kind``
(issue | pull), ``merged_at``, ``resolution``. A docs folder holds ``*.md``, ``*.markdown``,
``*.txt``, ``*.html``, ``*.htm`` and ``*.pdf`` files (converted by ``loaders``); front matter
``runbook: TAG`` marks a trusted runbook. A file that cannot be read is skipped with its reason
and the folder goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from resolveflow.errors import InvalidInput
from resolveflow.retrieval import loaders
from resolveflow.retrieval.loaders import LoadedDocument
from resolveflow.retrieval.loaders import front_matter as front_matter  # noqa: PLC0414 (re-export)
from resolveflow.retrieval.records import SourceDocument

DOC_SUFFIXES = tuple(loaders.SUFFIXES)
DEFAULT_MAX_BYTES = loaders.DEFAULT_MAX_BYTES


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


def read_doc_file(
    path: Path, root: Path, source: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> SourceDocument:
    """One file of a docs folder, or ``InvalidInput`` saying in one line why it cannot be read."""
    name = path.relative_to(root).as_posix()
    media_type = loaders.media_type_for(name)
    try:
        stat = path.stat()
        loaders.check_size(name, stat.st_size, max_bytes)  # before reading a huge file at all
        data = path.read_bytes()
    except OSError as exc:
        raise loaders.UnreadableDocument(f"{name}: cannot read ({exc.strerror or exc})") from None
    loaded = loaders.load_document(name, data, media_type, max_bytes=max_bytes)
    return source_document(loaded, source, datetime.fromtimestamp(stat.st_mtime, tz=UTC))


@dataclass
class DocsFolder:
    """The documents of a folder, in path order. Iterating reads them; afterwards ``seen`` holds
    every supported file's external id (read or not) and ``skipped`` each unreadable one with
    its one-line reason."""

    root: Path
    source: str
    max_bytes: int = DEFAULT_MAX_BYTES
    seen: set[str] = field(default_factory=set)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.root.is_dir():
            raise InvalidInput(f"{self.root} is not a directory")

    def __iter__(self) -> Iterator[SourceDocument]:
        for path in sorted(self.root.rglob("*")):
            if not (path.is_file() and path.suffix.lower() in DOC_SUFFIXES):
                continue
            name = path.relative_to(self.root).as_posix()
            self.seen.add(name)
            try:
                yield read_doc_file(path, self.root, self.source, max_bytes=self.max_bytes)
            except InvalidInput as exc:
                self.skipped.append((name, exc.message))


def read_docs_dir(
    root: Path, source: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[SourceDocument]:
    """The readable documents of a folder (unreadable files are left out; ``DocsFolder`` says
    which and why)."""
    yield from DocsFolder(root, source, max_bytes)
