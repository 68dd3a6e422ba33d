"""Reading documents from files: the JSONL corpus format and a folder of Markdown/text docs.

JSONL (see shared/data/README.md): one object a line with ``id``, ``title``, ``body``,
``created_at``, ``closed_at``, ``state``, ``labels``, ``url`` and optionally ``kind``
(issue | pull), ``merged_at``, ``resolution``. A docs folder holds ``*.md``, ``*.markdown`` and
``*.txt`` files; front matter ``runbook: TAG`` marks a trusted runbook.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from resolveflow.errors import InvalidInput
from resolveflow.retrieval.records import SourceDocument

DOC_SUFFIXES = (".md", ".markdown", ".txt")
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)


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


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """Simple ``key: value`` front matter between ``---`` lines, and the text after it."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip().lower()] = value.strip().strip("'\"")
    return fields, text[match.end() :]


def read_doc_file(path: Path, root: Path, source: str) -> SourceDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text") from None
    fields, body = front_matter(text)
    heading = _HEADING.search(body)
    title = fields.get("title") or (heading.group(1) if heading else path.stem.replace("-", " "))
    runbook = fields.get("runbook") or None
    modified = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    return SourceDocument(
        source=source,
        external_id=path.relative_to(root).as_posix(),
        kind="runbook" if runbook else "doc",
        title=title,
        body=body,
        runbook_tag=runbook,
        created_at=parse_time(fields.get("created_at"), where=str(path)) or modified,
        updated_at=modified,
    )


def read_docs_dir(root: Path, source: str) -> Iterator[SourceDocument]:
    if not root.is_dir():
        raise InvalidInput(f"{root} is not a directory")
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix.lower() in DOC_SUFFIXES:
            yield read_doc_file(path, root, source)
