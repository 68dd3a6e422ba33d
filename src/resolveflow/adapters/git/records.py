"""What a clone reports, as plain immutable values: commits, file stats, diff excerpts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class CommitInfo:
    """One commit as git reports it; ``message`` is the body after the subject ('' if none)."""

    sha: str
    committed_at: datetime  # the committer date, timezone-aware, in UTC
    subject: str
    message: str


@dataclass(frozen=True)
class FileStat:
    """One file a commit changed, against its first parent; counts are None for a binary file."""

    path: str  # the new path when the file was renamed
    added: int | None
    removed: int | None


@dataclass(frozen=True)
class DiffExcerpt:
    """The start of one file's unified diff in one commit; ``truncated`` when lines were left out."""

    text: str
    truncated: bool
