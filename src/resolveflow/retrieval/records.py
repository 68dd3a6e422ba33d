"""What goes into the index (``SourceDocument``) and what comes out of a search (``Hit``)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from resolveflow.errors import InvalidInput
from resolveflow.retrieval.chunking import CHUNKER_VERSION, CommentText

KINDS = ("issue", "pull", "comment", "runbook", "doc", "email")  # email: mail search only

# GitHub's closing keywords: "fixes #12", "Closes: #3", "resolved owner/repo#7" (same repository
# only: a link to another repository names a document of another source).
_FIXES = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+(?:([\w.-]+/[\w.-]+))?#(\d+)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SourceDocument:
    source: str
    external_id: str
    kind: str
    title: str
    body: str
    url: str | None = None
    state: str | None = None
    labels: tuple[str, ...] = ()
    created_at: datetime | None = None
    closed_at: datetime | None = None
    updated_at: datetime | None = None
    runbook_tag: str | None = None
    runbook_triggers: tuple[str, ...] = ()  # phrases that make refine attach this runbook
    comments: tuple[CommentText, ...] = ()
    repository: str | None = None  # owner/name, for "fixes owner/name#N" on GitHub sources

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not self.source or not self.external_id:
            raise InvalidInput("a document needs a source and an external id")

    def fixes(self) -> tuple[str, ...]:
        """External ids this pull request says it fixes (only pull requests resolve issues)."""
        if self.kind != "pull":
            return ()
        found: list[str] = []
        for text in (self.title, self.body):
            for match in _FIXES.finditer(text or ""):
                other = match.group(1)
                if other and (self.repository is None or other.lower() != self.repository.lower()):
                    continue
                found.append(match.group(2))
        return tuple(sorted(set(found), key=int))

    def content_hash(self) -> str:
        """Changes when anything indexed changes (including the chunker), so unchanged
        documents are not embedded again."""
        payload = {
            "v": CHUNKER_VERSION,
            "kind": self.kind,
            "title": self.title,
            "body": self.body,
            "url": self.url,
            "state": self.state,
            "labels": sorted(self.labels),
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "closed_at": self.closed_at.isoformat() if self.closed_at else None,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "runbook": self.runbook_tag,
            "comments": [[c.author, c.body] for c in self.comments],
            "fixes": list(self.fixes()),
        }
        if self.runbook_triggers:  # only when set: other documents keep their hashes
            payload["triggers"] = list(self.runbook_triggers)
        encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(encoded).hexdigest()


@dataclass(frozen=True)
class BranchScores:
    cosine: float  # similarity of the best chunk of the document to the query, in [-1, 1]
    vector_rank: int | None  # the document's rank in the vector branch (1-based), if retrieved
    lexical: float  # best BM25 score (idf × impact) of the document's chunks (0: no term matched)
    lexical_rank: int | None
    # ``lexical`` over the summed idf of the query's terms: the share of the question's words'
    # weight the best chunk holds (1: each of them once in a chunk of typical length), which
    # reads the same in any index, unlike a score scaled by the query's best.
    lexical_share: float = 0.0


@dataclass(frozen=True)
class Hit:
    document_id: UUID
    chunk_id: int
    source: str
    external_id: str
    kind: str
    title: str
    url: str | None
    state: str | None
    labels: tuple[str, ...]
    created_at: datetime | None
    closed_at: datetime | None
    runbook_tag: str | None
    section: str
    snippet: str
    scores: BranchScores
    fused: float
    relevance: float  # calibrated, in [0, 1]; see docs/retrieval.md
    resolved_by: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, object]:
        return {
            "document_id": str(self.document_id),
            "chunk_id": self.chunk_id,
            "source": self.source,
            "external_id": self.external_id,
            "kind": self.kind,
            "title": self.title,
            "url": self.url,
            "state": self.state,
            "labels": list(self.labels),
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "closed_at": self.closed_at.isoformat() if self.closed_at else None,
            "runbook_tag": self.runbook_tag,
            "section": self.section,
            "snippet": self.snippet,
            "scores": {
                "cosine": round(self.scores.cosine, 6),
                "vector_rank": self.scores.vector_rank,
                "lexical": round(self.scores.lexical, 6),
                "lexical_rank": self.scores.lexical_rank,
                "fused": round(self.fused, 6),
            },
            "relevance": round(self.relevance, 4),
            "resolved_by": list(self.resolved_by),
        }
