"""Changing an issue after it was opened, and reactions: the seeding functions tests call, and the
REST routes over them.

Routes (``ROUTES``):

- ``PATCH /repos/{o}/{r}/issues/{n}``: ``state`` (open, closed), ``state_reason`` (completed,
  not_planned, duplicate, reopened), ``duplicate_issue_id``, ``title`` and ``body``, as on
  GitHub: a close records ``closed`` (with its reason; ``closed_by`` is the token's login), a
  reopen ``reopened``, a new title ``renamed``; a new body records no event (GitHub's REST API
  has none for it). Closing a closed issue changes nothing and records nothing. ``labels``
  (replacing the whole set) and ``state`` also in their object form, with suggestions and
  ``If-Match``: ``suggestions.py``.
- ``GET``/``POST /repos/{o}/{r}/issues/{n}/reactions`` and
  ``GET``/``POST /repos/{o}/{r}/issues/comments/{id}/reactions``: a reaction per user and
  content (posting it again answers 200 with the existing one, as GitHub does).
"""

from __future__ import annotations

from typing import Any

from resolveflow.sandbox.forge import payloads, suggestions
from resolveflow.sandbox.forge.model import (
    REACTIONS,
    FakeRequest,
    IssueRecord,
    ReactionRecord,
    Timestamp,
    check_choice,
    timestamp,
)
from resolveflow.sandbox.forge.routing import REPO, Route, route
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.loopback import Reply

STATE_REASONS = frozenset({"completed", "not_planned", "duplicate", "reopened"})


def change_state(
    forge: ForgeState, issue: IssueRecord, state: str, reason: str | None, actor: str, at: str
) -> None:
    """Close or reopen (lock held), recording the event; the caller checked it is a change."""
    issue.state = state
    if state == "closed":
        issue.closed_at, issue.closed_by = at, actor
        issue.state_reason = reason or "completed"
        forge.record_event(issue, "closed", actor, at, state_reason=issue.state_reason)
    else:
        issue.closed_at = None
        issue.state_reason = "reopened"
        forge.record_event(issue, "reopened", actor, at)


def _rename(forge: ForgeState, issue: IssueRecord, title: str, actor: str, at: str) -> None:
    if title != issue.title:
        forge.record_event(issue, "renamed", actor, at, rename=(issue.title, title))
        issue.title = title


# --- seeding and inspection (each takes the lock) ------------------------------------------


def edit_issue(
    forge: ForgeState,
    full_name: str,
    number: int,
    *,
    title: str | None = None,
    body: str | None = None,
    actor: str = "octocat",
    created_at: Timestamp = None,
) -> None:
    """Edit an issue's title (recording ``renamed``) and/or body (no event, as on GitHub)."""
    with forge.lock:
        issue = forge.issue(full_name, number)
        at = timestamp(created_at, payloads.now_iso()) or payloads.now_iso()
        if title is not None:
            _rename(forge, issue, title, actor, at)
        if body is not None:
            issue.body = body
        issue.updated_at = max(issue.updated_at, at)


def add_reaction(
    forge: ForgeState,
    full_name: str,
    number: int,
    content: str,
    *,
    user: str = "octocat",
    comment_id: int | None = None,
    created_at: Timestamp = None,
) -> int:
    """Seed a reaction on the issue (or on its comment ``comment_id``); returns its id."""
    check_choice("content", content, REACTIONS)
    with forge.lock:
        issue = forge.issue(full_name, number)
        at = timestamp(created_at, payloads.now_iso()) or payloads.now_iso()
        return _react(forge, issue, comment_id, content, user, at)[0].id


def _react(
    forge: ForgeState,
    issue: IssueRecord,
    comment_id: int | None,
    content: str,
    user: str,
    at: str,
) -> tuple[ReactionRecord, bool]:
    if comment_id is None:
        found = issue.reactions
    else:
        if not any(comment["id"] == comment_id for comment in issue.comments):
            raise payloads.Rejected(404, payloads.not_found())
        found = issue.comment_reactions.setdefault(comment_id, [])
    for existing in found:
        if existing.user == user and existing.content == content:
            return existing, False
    record = ReactionRecord(forge.new_id(), content, user, at)
    found.append(record)
    return record, True


def _payload(forge: ForgeState, record: ReactionRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "node_id": payloads.node_id("REA", record.id),
        "user": payloads.simple_user(forge.url, forge.url, record.user),
        "content": record.content,
        "created_at": record.created_at,
    }


# --- routes (lock held) --------------------------------------------------------------------


def update_issue(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, number = request.params
    assert request.login is not None  # the dispatcher answers 401 first
    issue = forge.issue(full_name, int(number))
    body = payloads.json_body(request.body)
    if not isinstance(body, dict):
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "body", "invalid"))
    suggestions.check_preconditions(forge, issue, request.if_match)
    state, reason = suggestions.parse_state(forge, body), body.get("state_reason")
    labels = suggestions.parse_labels(forge, body)
    if reason is not None and reason not in STATE_REASONS:
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "state", "invalid"))
    at, actor = payloads.now_iso(), request.login
    if isinstance(body.get("title"), str):
        _rename(forge, issue, body["title"], actor, at)
    if isinstance(body.get("body"), str):
        issue.body = body["body"]
    if labels is not None:
        suggestions.set_labels(forge, full_name, issue, labels, actor, at)
    if state is not None and state.suggest and state.value != issue.state:
        duplicate = body.get("duplicate_issue_id")
        original = duplicate if isinstance(duplicate, int) else None
        suggestions.suggest(forge, issue, "close_issue", state, actor, at, original)
    elif state is not None and state.value != issue.state:
        change_state(forge, issue, state.value, reason, actor, at)
    issue.updated_at = max(issue.updated_at, at)
    return Reply(200, forge.issue_payload(full_name, issue))


def _target(forge: ForgeState, request: FakeRequest) -> tuple[IssueRecord, int | None]:
    full_name, ref = request.params
    if "/comments/" in request.path:
        comment_id = int(ref)
        for issue in forge.repo(full_name).issues.values():
            if any(comment["id"] == comment_id for comment in issue.comments):
                return issue, comment_id
        raise payloads.Rejected(404, payloads.not_found())
    return forge.issue(full_name, int(ref)), None


def list_reactions(forge: ForgeState, request: FakeRequest) -> Reply:
    issue, comment_id = _target(forge, request)
    found = issue.reactions if comment_id is None else issue.comment_reactions.get(comment_id, [])
    return forge.paged(request, [_payload(forge, record) for record in found])


def create_reaction(forge: ForgeState, request: FakeRequest) -> Reply:
    assert request.login is not None
    issue, comment_id = _target(forge, request)
    body = payloads.json_body(request.body)
    content = body.get("content") if isinstance(body, dict) else None
    if content not in REACTIONS:
        raise payloads.Rejected(422, payloads.validation_failed("Reaction", "content", "invalid"))
    record, new = _react(forge, issue, comment_id, content, request.login, payloads.now_iso())
    return Reply(201 if new else 200, _payload(forge, record))


ROUTES: list[Route[ForgeState]] = [
    route("GET", rf"{REPO}/issues/comments/(\d+)/reactions", list_reactions),
    route("POST", rf"{REPO}/issues/comments/(\d+)/reactions", create_reaction),
    route("GET", rf"{REPO}/issues/(\d+)/reactions", list_reactions),
    route("POST", rf"{REPO}/issues/(\d+)/reactions", create_reaction),
    route("PATCH", rf"{REPO}/issues/(\d+)", update_issue),
]
