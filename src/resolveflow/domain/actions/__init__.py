"""Canonical actions and the digest a person approves.

An action is what the executor may do to an outside system; its ``kind`` says which. Its canonical
JSON is the exact text that is hashed: two actions that mean the same thing (labels in another
order, a repeated label, the same text in another Unicode normal form or with CRLF line endings)
share a digest; any change a reader would notice gives another.

Adding a kind: a frozen, ``extra="forbid"`` model with a ``kind`` literal, ``canonical()``,
``repository`` and ``summary``; a member of ``ActionKind``; a member of the ``Action`` union; and
its executor in ``resolveflow.execution.kinds``.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from resolveflow.domain.actions.github_issue import (
    MAX_COMMENT_CHARS,
    GitHubIssueAction,
    IssueTarget,
)
from resolveflow.domain.actions.github_issue_create import (
    GitHubIssueCreateAction,
    RepositoryTarget,
)
from resolveflow.domain.actions.revise import ActionChanges, revise
from resolveflow.domain.actions.text import (
    MARKER_PREFIX,
    body_with_marker,
    execution_marker,
    normalize_text,
)
from resolveflow.errors import InvalidInput

__all__ = [
    "MARKER_PREFIX",
    "MAX_COMMENT_CHARS",
    "Action",
    "ActionChanges",
    "ActionKind",
    "GitHubIssueAction",
    "GitHubIssueCreateAction",
    "IssueTarget",
    "RepositoryTarget",
    "action_digest",
    "body_with_marker",
    "build_action",
    "build_issue_create",
    "canonical_json",
    "check_digest_format",
    "execution_marker",
    "normalize_text",
    "parse_action",
    "revise",
]


class ActionKind(StrEnum):
    GITHUB_ISSUE = "github.issue"  # comment and/or labels on an existing issue
    GITHUB_ISSUE_CREATE = "github.issue_create"  # a new issue


ACTION_KIND = ActionKind.GITHUB_ISSUE  # the kind triage proposes

Action = Annotated[GitHubIssueAction | GitHubIssueCreateAction, Field(discriminator="kind")]
_ACTION: TypeAdapter[GitHubIssueAction | GitHubIssueCreateAction] = TypeAdapter(Action)
DIGEST_PATTERN = re.compile(r"^[0-9a-f]{64}$")


def parse_action(data: Any) -> GitHubIssueAction | GitHubIssueCreateAction:
    """Validate untrusted action data, turning pydantic's report into one readable error.

    Data without a ``kind`` is a ``github.issue`` (the only kind before kinds existed)."""
    if isinstance(data, dict) and "kind" not in data:
        data = {**data, "kind": ActionKind.GITHUB_ISSUE.value}
    try:
        return _ACTION.validate_python(data)
    except ValueError as exc:
        raise InvalidInput(f"invalid action: {_first_error(exc)}") from exc


def build_action(
    repository: str, issue: int, comment: str | None, labels: list[str] | tuple[str, ...]
) -> GitHubIssueAction:
    action = parse_action(
        {
            "kind": ActionKind.GITHUB_ISSUE.value,
            "target": {"repository": repository, "issue": issue},
            "comment": comment,
            "labels": labels,
        }
    )
    assert isinstance(action, GitHubIssueAction)
    return action


def build_issue_create(
    repository: str,
    title: str,
    body: str,
    labels: list[str] | tuple[str, ...] = (),
    assignees: list[str] | tuple[str, ...] = (),
) -> GitHubIssueCreateAction:
    action = parse_action(
        {
            "kind": ActionKind.GITHUB_ISSUE_CREATE.value,
            "target": {"repository": repository},
            "title": title,
            "body": body,
            "labels": labels,
            "assignees": assignees,
        }
    )
    assert isinstance(action, GitHubIssueCreateAction)
    return action


def canonical_json(action: GitHubIssueAction | GitHubIssueCreateAction) -> str:
    return json.dumps(action.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def action_digest(action: GitHubIssueAction | GitHubIssueCreateAction) -> str:
    return hashlib.sha256(canonical_json(action).encode("utf-8")).hexdigest()


def check_digest_format(digest: str) -> str:
    value = digest.strip().lower()
    if value.startswith("sha256:"):
        value = value.removeprefix("sha256:")
    if not DIGEST_PATTERN.match(value):
        raise InvalidInput("a digest is 64 hexadecimal characters (SHA-256)")
    return value


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        details = errors()
        if details:
            first = details[0]
            loc = [str(part) for part in first.get("loc", ())]
            # A discriminated union prefixes the kind ("github.issue.comment"); drop it.
            if loc and loc[0] in {kind.value for kind in ActionKind}:
                loc = loc[1:]
            where = ".".join(loc)
            message = str(first.get("msg", exc)).removeprefix("Value error, ")
            return f"{where}: {message}" if where else message
    return str(exc)
