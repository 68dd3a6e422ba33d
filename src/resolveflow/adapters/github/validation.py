"""Argument checks for ``GitHubKitClient``, run before anything is sent.

githubkit interpolates path parameters into the URL unescaped, so owner/name, numbers and git refs
are refused here unless they are plainly safe; request bodies are checked against GitHub's own
limits so a write that cannot succeed is never attempted. Every failure is ``InvalidInput``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from resolveflow.adapters.base import Call
from resolveflow.adapters.github.protocol import IntentNote, LabelWrite, RepoName
from resolveflow.errors import InvalidInput

ISSUE_STATES = ("open", "closed", "all")
MAX_ISSUE_TITLE = 256  # characters; GitHub refuses longer titles with a 422
MAX_ISSUE_BODY = 65536  # characters; GitHub's limit for issue and comment bodies

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # used with fullmatch: "$" would accept a "\n"
COMMIT_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1, or SHA-256 repositories
# A hex sha or a branch/tag name in git's check-ref-format rules, restricted to URL-safe characters:
# no "..", "//", "@", leading "-", "." or "/", component starting with ".", trailing "/", "." or
# ".lock". Slashes are allowed ("release/1.2"): GitHub resolves them inside the path.
_REF = re.compile(r"(?![-./])(?!.*\.\.)(?!.*//)(?!.*/\.)[A-Za-z0-9._/-]{1,255}(?<![/.])(?<!\.lock)")


def repo_call(
    operation: str, method: str, repo: RepoName, tail: str, *, write: bool = False
) -> Call:
    return Call(operation, method, f"/repos/{repo.owner}/{repo.name}/{tail}", write)


def check_file_path(path: str) -> None:
    """A path in the repository, segment by segment as a name is: nothing that climbs out."""
    parts = path.split("/") if isinstance(path, str) else [""]
    if any(not _NAME.fullmatch(part) or part in (".", "..") for part in parts):
        raise InvalidInput(f"Not a valid path in a repository: {path!r}.")


def check_repo(repo: RepoName) -> None:
    """githubkit interpolates owner/name into the URL unescaped: refuse anything path-like."""
    for part in (repo.owner, repo.name):
        if not isinstance(part, str) or not _NAME.fullmatch(part) or part in (".", ".."):
            raise InvalidInput(f"Not a valid GitHub repository name: {repo.full_name!r}.")


def check_target(repo: RepoName, issue_number: int) -> None:
    check_repo(repo)
    check_positive(issue_number, "issue number")


def check_positive(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"Not a valid {what}: {value!r}.")


def check_ref(ref: str) -> None:
    if not isinstance(ref, str) or not _REF.fullmatch(ref):
        raise InvalidInput(f"Not a commit sha or a safe git ref name: {ref!r}.")


def check_names(names: Sequence[str], what: str, *, allow_empty: bool) -> None:
    """A list of label names or logins: every entry a non-empty string."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InvalidInput(f"{what} must be a list of names: {names!r}.")
    if not allow_empty and not names:
        raise InvalidInput(f"At least one {what} is needed.")
    if not all(isinstance(name, str) and name for name in names):
        raise InvalidInput(f"Every {what} must be a non-empty string: {list(names)!r}.")


def check_new_issue(title: str, body: str, labels: Sequence[str], assignees: Sequence[str]) -> None:
    """GitHub's limits for a new issue, so a write that must fail is never sent."""
    if not isinstance(title, str) or not title.strip():
        raise InvalidInput("An issue title must not be empty.")
    if title.splitlines() != [title]:  # any line break, including a trailing one
        raise InvalidInput("An issue title must be a single line.")
    if len(title) > MAX_ISSUE_TITLE:
        raise InvalidInput(f"An issue title holds at most {MAX_ISSUE_TITLE} characters.")
    if not isinstance(body, str):
        raise InvalidInput("An issue body must be text.")
    if len(body) > MAX_ISSUE_BODY:
        raise InvalidInput(f"An issue body holds at most {MAX_ISSUE_BODY} characters.")
    check_names(labels, "label name", allow_empty=True)
    check_names(assignees, "assignee login", allow_empty=True)


def iso_z(moment: datetime) -> str:
    """GitHub's timestamp format; a naive datetime is refused rather than guessed at."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInput(f"since must be timezone-aware: {moment!r}.")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


MAX_RATIONALE = 280  # characters; GitHub's limit for a rationale
CONFIDENCES = ("LOW", "MEDIUM", "HIGH")
MAX_ISSUE_LABELS = 100  # GitHub's limit of labels on one issue


def check_intent(note: IntentNote) -> None:
    if not note.rationale.strip() or len(note.rationale) > MAX_RATIONALE:
        raise InvalidInput(f"A rationale is 1 to {MAX_RATIONALE} characters.")
    if note.confidence not in CONFIDENCES:
        raise InvalidInput(f"A confidence is one of {', '.join(CONFIDENCES)}.")


def check_label_writes(labels: Sequence[LabelWrite]) -> None:
    """Names one line, non-empty, unique (any case), at most GitHub's limit; intents valid."""
    names = [label.name for label in labels]
    if not all(isinstance(name, str) and name.strip() and "\n" not in name for name in names):
        raise InvalidInput("Every label needs a one-line, non-empty name.")
    if len({name.lower() for name in names}) != len(names) or len(names) > MAX_ISSUE_LABELS:
        raise InvalidInput(f"Labels are unique and at most {MAX_ISSUE_LABELS}.")
    for label in labels:
        if label.note is not None:
            check_intent(label.note)
