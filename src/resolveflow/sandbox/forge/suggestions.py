"""The object form of the issue update and GitHub's issue suggestions, as the fake forge keeps them.

``PATCH /repos/{o}/{r}/issues/{n}`` takes ``labels`` as names or objects ``{"name", "rationale",
"confidence", "suggest"}`` and ``state`` as ``"closed"`` or ``{"value", "rationale",
"confidence", "suggest"}`` (confidence in any case: GitHub's MCP server sends capitals, the
OpenAPI description lower case). ``labels`` replaces the issue's whole set, less the labels sent
with ``suggest: true``: those (and a suggested close) become pending suggestions in the shape of
GitHub's ``IssueSuggestion`` (``GET .../issues/{n}/suggestions``), which a test accepts or
dismisses as a maintainer would (``resolve``), getting the ``issues`` webhook payload GitHub sends
for it (``webhook_for``). ``GET .../issues/{n}/suggestions`` lists them as GitHub does: only
the pending ones by default, every state with ``state=all``, one state with ``state=<state>``,
one kind with ``action=<action>`` (``ROUTES``).

What the forge can be told (``ForgeState``): ``refuse_object_form`` answers any object form with
GitHub's 422 ``Validation Failed`` naming the field, as an Enterprise Server without it does;
``honour_if_match`` answers 412 to a write whose ``If-Match`` is not the issue's current
``ETag`` (GitHub documents ``ETag`` for reads only, so it is off unless a test turns it on).
A GET of the issue always answers its ``ETag``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.model import FakeRequest, IssueRecord
from resolveflow.sandbox.forge.routing import REPO, Route, route
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.loopback import Reply

CONFIDENCES = frozenset({"LOW", "MEDIUM", "HIGH"})
MAX_RATIONALE = 280


@dataclass
class SuggestionRecord:
    id: int
    issue_number: int
    issue_id: int
    action: str  # add_label | close_issue
    target_value: str  # the label's name, or "duplicate" for a close
    rationale: str | None
    confidence: str | None
    actor: str
    created_at: str
    duplicate_issue_id: int | None = None
    state: str = "pending"  # pending | approved | dismissed
    resolved_by: str | None = None
    updated_at: str | None = None  # when it was resolved


@dataclass(frozen=True)
class Intent:
    value: str
    rationale: str | None = None
    confidence: str | None = None
    suggest: bool = False
    is_object: bool = False


def etag(issue: IssueRecord) -> str:
    """A strong validator of what a write could race: labels, state, title and body."""
    seen = [sorted(issue.labels), issue.state, issue.state_reason, issue.title, issue.body]
    return '"' + hashlib.sha256(json.dumps(seen).encode()).hexdigest()[:32] + '"'


def check_preconditions(forge: ForgeState, issue: IssueRecord, if_match: str | None) -> None:
    if forge.honour_if_match and if_match is not None and if_match != etag(issue):
        raise payloads.Rejected(412, payloads.error("Precondition Failed", status=412))


def _intent(item: Any, key: str, field: str) -> Intent:
    if isinstance(item, str):
        return Intent(item)
    if not isinstance(item, dict) or not isinstance(item.get(key), str) or not item[key]:
        raise payloads.Rejected(422, payloads.validation_failed("Issue", field, "invalid"))
    rationale, confidence = item.get("rationale"), item.get("confidence")
    if rationale is not None and (not isinstance(rationale, str) or len(rationale) > 280):
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "rationale", "invalid"))
    if confidence is not None and str(confidence).upper() not in CONFIDENCES:
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "confidence", "invalid"))
    suggest = item.get("suggest", False)
    if not isinstance(suggest, bool):
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "suggest", "invalid"))
    upper = None if confidence is None else str(confidence).upper()
    return Intent(item[key], rationale, upper, suggest, is_object=True)


def parse_labels(forge: ForgeState, body: dict[str, Any]) -> list[Intent] | None:
    items = body.get("labels")
    if items is None:
        return None
    if not isinstance(items, list):
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "labels", "invalid"))
    intents = [_intent(item, "name", "labels") for item in items]
    if forge.refuse_object_form and any(i.is_object for i in intents):
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "labels", "invalid"))
    return intents


def parse_state(forge: ForgeState, body: dict[str, Any]) -> Intent | None:
    state = body.get("state")
    if state is None:
        return None
    intent = _intent(state, "value", "state")
    if forge.refuse_object_form and intent.is_object:
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "state", "invalid"))
    if intent.value not in ("open", "closed"):
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "state", "invalid"))
    return intent


def set_labels(
    forge: ForgeState, full_name: str, issue: IssueRecord, wanted: list[Intent], actor: str, at: str
) -> None:
    """Replace the issue's labels with the applied ones; suggested ones wait as suggestions."""
    repo = forge.repo(full_name)
    applied = {i.value.lower(): i for i in wanted if not i.suggest}
    for key in list(issue.labels):
        if key not in applied:
            forge.unlabel_issue(repo, issue, key, actor, at)
    for intent in applied.values():
        forge.label_issue(repo, issue, intent.value, actor, at)
        if intent.rationale is not None:
            issue.label_intents[intent.value.lower()] = (intent.rationale, intent.confidence)
    for intent in wanted:
        if intent.suggest and intent.value.lower() not in issue.labels:
            suggest(forge, issue, "add_label", intent, actor, at)


def suggest(
    forge: ForgeState,
    issue: IssueRecord,
    action: str,
    intent: Intent,
    actor: str,
    at: str,
    duplicate_issue_id: int | None = None,
) -> None:
    value = intent.value if action == "add_label" else "duplicate"
    forge.suggestions.append(
        SuggestionRecord(
            forge.new_id(),
            issue.number,
            issue.id,
            action,
            value,
            intent.rationale,
            intent.confidence,
            actor,
            at,
            duplicate_issue_id,
        )
    )


# --- seeding and inspection (each takes the lock) ------------------------------------------


def issue_suggestions(forge: ForgeState, full_name: str, number: int) -> list[SuggestionRecord]:
    with forge.lock:
        forge.issue(full_name, number)
        return [s for s in forge.suggestions if s.issue_number == number]


def resolve(
    forge: ForgeState, full_name: str, suggestion_id: int, *, accept: bool, actor: str
) -> dict[str, Any]:
    """A maintainer accepts (the label is put on, or the issue closed as a duplicate, by
    ``actor``) or dismisses one pending suggestion; returns the ``issues`` webhook payload."""
    from resolveflow.sandbox.forge.edits import change_state

    with forge.lock:
        found = next(s for s in forge.suggestions if s.id == suggestion_id)
        issue = forge.issue(full_name, found.issue_number)
        at = payloads.now_iso()
        found.state, found.resolved_by = ("approved" if accept else "dismissed"), actor
        found.updated_at = at
        if accept and found.action == "add_label":
            forge.label_issue(forge.repo(full_name), issue, found.target_value, actor, at)
        elif accept and issue.state != "closed":
            change_state(forge, issue, "closed", "duplicate", actor, at)
        issue.updated_at = max(issue.updated_at, at)
        return webhook_for(forge, full_name, issue, found)


def webhook_for(
    forge: ForgeState, full_name: str, issue: IssueRecord, found: SuggestionRecord
) -> dict[str, Any]:
    """The ``issues`` delivery for a resolved suggestion: an accepted label is ``labeled`` (with
    the ``label``), an accepted close ``closed`` (``state_reason: duplicate``), as for any label
    or close a person makes; a dismissal, for which GitHub documents no ``issues`` action yet, is
    ``suggestion_dismissed`` carrying the ``IssueSuggestion`` (``suggestion``)."""
    base: dict[str, Any] = {
        "issue": forge.issue_payload(full_name, issue),
        "repository": {"full_name": full_name, "name": full_name.split("/")[1]},
        "sender": {"login": found.resolved_by, "type": "User"},
    }
    if found.state == "dismissed":
        return {"action": "suggestion_dismissed", "suggestion": suggestion_payload(found), **base}
    if found.action == "add_label":
        label = forge.label_payloads(full_name, [found.target_value.lower()])[0]
        return {"action": "labeled", "label": label, **base}
    return {"action": "closed", **base}


def suggestion_payload(found: SuggestionRecord) -> dict[str, Any]:
    """GitHub's ``IssueSuggestion`` (REST: ``GET /repos/{o}/{r}/issues/{n}/suggestions``)."""
    return {
        "id": found.id,
        "issue_id": found.issue_id,
        "action": found.action,
        "state": found.state,
        "target_id": found.duplicate_issue_id,
        "target_value": found.target_value,
        "rationale": found.rationale,
        "confidence": found.confidence,
        "actor_id": payloads.user_id(found.actor),
        "issue_event_id": None,
        "resolved_by": None if found.resolved_by is None else payloads.user_id(found.resolved_by),
        "created_at": found.created_at,
        "updated_at": found.updated_at or found.created_at,
    }


STATES = ("pending", "applied", "approved", "dismissed", "replaced", "invalidated", "all")
ACTIONS = ("set_type", "add_label", "add_field", "add_assignee", "close_issue")


def list_suggestions(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, number = request.params
    issue = forge.issue(full_name, int(number))
    state, action = request.args.get("state", "pending"), request.args.get("action")
    if state not in STATES or (action is not None and action not in ACTIONS):
        raise payloads.Rejected(422, payloads.validation_failed("Issue", "state", "invalid"))
    found = [
        suggestion_payload(s)
        for s in forge.suggestions
        if s.issue_id == issue.id and state in ("all", s.state) and action in (None, s.action)
    ]
    return forge.paged(request, found)


ROUTES: list[Route[ForgeState]] = [
    route("GET", rf"{REPO}/issues/(\d+)/suggestions", list_suggestions),
]
