"""What a triage run saw, as typed values, and the facts derived from it by documented rules.

Raw data from GitHub arrives as plain JSON (graph state is JSON) and is validated strictly here: a
missing or mistyped field is one readable error for the run, never a crash three steps later.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from resolveflow.errors import InvalidInput

FAILING_CONCLUSIONS = frozenset({"failure", "timed_out"})
SPARSE_MAX_CHARS = 200  # words left after removing template boilerplate (see is_information_sparse)

_STRICT = ConfigDict(strict=True, extra="ignore", frozen=True)


class RawComment(BaseModel):
    model_config = _STRICT
    id: int
    body: str
    author: str
    url: str
    author_association: str = "NONE"
    created_at: str | None = None


class RawCheckRun(BaseModel):
    model_config = _STRICT
    id: int
    name: str
    status: str
    conclusion: str | None
    url: str
    summary: str | None = None
    head_sha: str | None = None
    kind: Literal["check_run", "workflow_run"] = "check_run"


class RawIssue(BaseModel):
    model_config = _STRICT
    number: int = Field(gt=0)
    title: str
    body: str
    state: str
    author: str
    author_association: str
    labels: list[str]
    created_at: str
    updated_at: str
    closed_at: str | None
    is_pull_request: bool
    url: str


class RawEvidence(BaseModel):
    """Exactly what fetch_evidence read from GitHub, before interpretation."""

    model_config = _STRICT
    repository: str
    issue: RawIssue
    comments: list[RawComment]
    check_runs: list[RawCheckRun]
    repository_labels: list[str]
    notes: list[str] = []


class Fact(BaseModel):
    model_config = ConfigDict(frozen=True)
    value: bool
    rule: str  # which documented rule produced the value, in words


class IssueEvidence(BaseModel):
    model_config = ConfigDict(frozen=True)
    repository: str
    number: int
    title: str
    body: str
    author: str
    author_association: str
    labels: tuple[str, ...]
    state: str
    is_pull_request: bool
    url: str
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None
    comments: tuple[RawComment, ...]
    check_runs: tuple[RawCheckRun, ...]
    repository_labels: tuple[str, ...]
    facts: dict[str, Fact]
    notes: tuple[str, ...] = ()

    @property
    def failing_checks(self) -> list[RawCheckRun]:
        return [run for run in self.check_runs if run.conclusion in FAILING_CONCLUSIONS]


def normalize(raw: dict[str, Any]) -> IssueEvidence:
    """Validate the raw JSON strictly and derive the facts."""
    try:
        data = RawEvidence.model_validate(raw)
        created = datetime.fromisoformat(data.issue.created_at)
        updated = datetime.fromisoformat(data.issue.updated_at)
        closed = datetime.fromisoformat(data.issue.closed_at) if data.issue.closed_at else None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidInput(f"GitHub's answer is malformed at {where}: {first['msg']}") from None
    except ValueError as exc:
        raise InvalidInput(f"GitHub's answer has an unreadable timestamp: {exc}") from None
    issue = data.issue
    return IssueEvidence(
        repository=data.repository.lower(),
        number=issue.number,
        title=issue.title,
        body=issue.body,
        author=issue.author,
        author_association=issue.author_association,
        labels=tuple(issue.labels),
        state=issue.state,
        is_pull_request=issue.is_pull_request,
        url=issue.url,
        created_at=created,
        updated_at=updated,
        closed_at=closed,
        comments=tuple(data.comments),
        check_runs=tuple(data.check_runs),
        repository_labels=tuple(data.repository_labels),
        notes=tuple(data.notes),
        facts={
            "has_failing_ci": has_failing_ci(data.check_runs),
            "is_information_sparse": is_information_sparse(issue.body),
        },
    )


def has_failing_ci(check_runs: list[RawCheckRun]) -> Fact:
    failing = [run for run in check_runs if run.conclusion in FAILING_CONCLUSIONS]
    if failing:
        names = ", ".join(f"{run.name} ({run.conclusion})" for run in failing[:5])
        return Fact(value=True, rule=f"check run conclusion failure or timed_out: {names}")
    return Fact(value=False, rule=_none_failed(len(check_runs)))


def _none_failed(runs: int) -> str:
    if runs == 1:
        return "the one check run did not fail or time out"
    return f"none of {runs} check runs failed or timed out"


# --- information sparsity -------------------------------------------------------------------

_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# Line-anchored patterns use [ \t] rather than \s: with MULTILINE, "^\s*" can run across
# newlines and makes the scan quadratic in the number of lines (90 s on a 64 KB body of newlines).
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t].*$", re.MULTILINE)
_CHECKBOX = re.compile(r"^[ \t]*[-*][ \t]*\[[ xX]\][ \t].*$", re.MULTILINE)
_NO_RESPONSE = re.compile(r"^[ \t]*_?no response_?[ \t]*$", re.MULTILINE | re.IGNORECASE)
_CODE_BLOCK = re.compile(r"```|~~~|^(?: {4}|\t)\S", re.MULTILINE)
_STACK_TRACE = re.compile(
    r"Traceback \(most recent call last\)|^[ \t]+File \".+\", line \d+|^[ \t]+at [\w.$]+\(|"
    r"\b\w+(?:Error|Exception):",
    re.MULTILINE,
)
_VERSION = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?\b|\bversion\b", re.IGNORECASE)
_REPRO = re.compile(
    r"^[ \t]*\d+[.)][ \t]+\S|\bsteps? to reproduce\b|\bto reproduce\b|\breproduc(?:e|ible|tion)\b",
    re.MULTILINE | re.IGNORECASE,
)


def strip_boilerplate(body: str) -> str:
    """Remove what issue templates put in every report: comments, headings, checkboxes."""
    text = _HTML_COMMENT.sub("", body.replace("\r\n", "\n"))
    for pattern in (_HEADING, _CHECKBOX, _NO_RESPONSE):
        text = pattern.sub("", text)
    return " ".join(text.split())


SCAN_CHARS = 100_000  # bodies can be 1 MB; the signals are decided well within this prefix


def is_information_sparse(body: str) -> Fact:
    """Sparse: under SPARSE_MAX_CHARS characters once template boilerplate is removed, AND no code
    block, stack trace, version number or reproduction steps anywhere in the body."""
    body = body[:SCAN_CHARS]
    content = strip_boilerplate(body)
    signals = [
        name
        for name, pattern in (
            ("code block", _CODE_BLOCK),
            ("stack trace", _STACK_TRACE),
            ("version", _VERSION),
            ("reproduction steps", _REPRO),
        )
        if pattern.search(body)
    ]
    if len(content) >= SPARSE_MAX_CHARS:
        return Fact(
            value=False, rule=f"{len(content)} characters of content (>= {SPARSE_MAX_CHARS})"
        )
    if signals:
        return Fact(value=False, rule=f"short, but has {', '.join(signals)}")
    return Fact(
        value=True,
        rule=f"{len(content)} characters of content once template boilerplate is removed "
        f"(< {SPARSE_MAX_CHARS}); no code block, stack trace, version or reproduction steps",
    )
