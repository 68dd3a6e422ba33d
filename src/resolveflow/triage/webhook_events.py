"""What a verified webhook body is: an event the product acts on, or one it records as ignored.

``parse_delivery`` reads only what routing needs. Headers that are missing or malformed, and a
body that is not a JSON object (not JSON, another JSON value, nested too deeply to parse), are
``InvalidInput`` (400). Any JSON object is a delivery GitHub could send: it is acknowledged, and
when the product does not act on it, ``ignored`` says why. Nothing from the body reaches the
database unless it matched a strict pattern, so no body can make a statement fail.

An event acted on has a ``key``: (scope, event, repository, issue, action, subject, updated_at).
The database refuses a second record of a key, so a captured body sent again under a fresh
delivery id starts nothing (``triage.webhooks.record_delivery``).

An ``issues`` delivery may also say what a maintainer did with a GitHub suggestion (``signal``,
``gate/suggestion_decisions.py``): ``labeled`` (the label put on), ``closed`` with
``state_reason: duplicate``, and ``suggestion_dismissed`` with the ``suggestion`` (GitHub's
``IssueSuggestion``; GitHub documents no action for a dismissal yet, so this is our reading of
one, and the suggestions API is read back as well). Whether it was our suggestion is decided per
tenant, against what that tenant's executions sent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from resolveflow.domain.vocabulary import GitHubVerdict, SuggestedPart
from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.suggestion_decisions import READ_PARTS, SuggestionSignal
from resolveflow.triage.store.webhooks import EventKey

TRIAGE_ACTIONS = frozenset({"opened", "reopened"})
INDEX_EVENTS = {
    "issues": frozenset({"opened", "edited", "closed", "reopened", "labeled", "unlabeled"}),
    "issue_comment": frozenset({"created", "edited", "deleted"}),
}
SUGGESTION_ACTIONS = {"issues": frozenset({"suggestion_dismissed"})}
# Matched with fullmatch: a "$" would let a trailing newline through.
_DELIVERY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,99}")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,49}")  # event and action names: projects_v2_item
_REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})"
)
_MAX_ID = 2**63
_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?")


@dataclass(frozen=True)
class Delivery:
    delivery_id: str
    event: str
    action: str | None
    repository: str | None
    issue_number: int | None
    tenant_id: UUID | None = None  # the tenant whose secret signed it; None: the global secret
    subject: str = ""  # 'comment:ID' or 'label:NAME': what tells one issue's events apart
    updated_at: datetime | None = None
    ignored: str | None = None  # why the product does not act on it; None: it does
    signal: SuggestionSignal | None = None  # what it says a maintainer did with a suggestion

    @property
    def triage(self) -> bool:
        return self.event == "issues" and self.action in TRIAGE_ACTIONS

    @property
    def actionable(self) -> bool:
        return self.ignored is None

    def key(self) -> EventKey | None:
        if (
            self.ignored is not None
            or self.action is None
            or self.repository is None
            or self.issue_number is None
            or self.updated_at is None
        ):
            return None
        return EventKey(
            tenant_id=self.tenant_id,
            event=self.event,
            repository=self.repository,
            issue_number=self.issue_number,
            action=self.action,
            subject=self.subject,
            updated_at=self.updated_at,
        )


def parse_delivery(
    delivery_id: str | None, event: str | None, body: bytes, tenant_id: UUID | None = None
) -> Delivery:
    """Read only what routing needs from an (already verified) body; see the module text."""
    if not delivery_id or not _DELIVERY_ID.fullmatch(delivery_id):
        raise InvalidInput("X-GitHub-Delivery is missing or malformed")
    if not event or not _NAME.fullmatch(event):
        raise InvalidInput("X-GitHub-Event is missing or malformed")
    payload = _json_object(body)
    action = _name(payload.get("action"))
    repository = _dig(payload, "repository", "full_name")
    number = _dig(payload, "issue", "number")
    fields: dict[str, Any] = {
        "delivery_id": delivery_id,
        "event": event,
        "action": action,
        "repository": repository.lower()
        if isinstance(repository, str) and _REPOSITORY.fullmatch(repository)
        else None,
        "issue_number": number if _is_int(number, 2**31) else None,
        "tenant_id": tenant_id,
    }
    subject, updated_at, missing = _identity(event, action, payload)
    ignored = _why_ignored(event, action, fields, missing)
    signal = suggestion_signal(event, action, payload) if ignored is None else None
    return Delivery(
        **fields, subject=subject, updated_at=updated_at, ignored=ignored, signal=signal
    )


def suggestion_signal(
    event: str, action: str | None, payload: dict[str, Any]
) -> SuggestionSignal | None:
    """What an ``issues`` delivery says a maintainer did with a suggestion, if anything."""
    login = _dig(payload, "sender", "login")
    if event != "issues" or not isinstance(login, str) or not _LOGIN.fullmatch(login):
        return None
    accepted, dismissed = GitHubVerdict.ACCEPTED, GitHubVerdict.DISMISSED
    if action == "labeled":
        label = _dig(payload, "label", "name")
        if _safe_text(label, 100):
            return SuggestionSignal(SuggestedPart.LABEL, label, accepted, login)
    if action == "closed" and _dig(payload, "issue", "state_reason") == "duplicate":
        return SuggestionSignal(SuggestedPart.DUPLICATE, "", accepted, login)
    if action == "suggestion_dismissed":
        part = READ_PARTS.get(str(_dig(payload, "suggestion", "action")))
        value = _dig(payload, "suggestion", "target_value")
        if part is SuggestedPart.LABEL and _safe_text(value, 100):
            return SuggestionSignal(part, value, dismissed, login)
        if part is SuggestedPart.DUPLICATE:
            return SuggestionSignal(part, "", dismissed, login)
    return None


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except RecursionError:  # json's C parser recurses once per level: [[[[... exhausts the stack
        raise InvalidInput("the body is nested too deeply to be an event") from None
    except ValueError:  # also UnicodeDecodeError and integers too long to convert
        raise InvalidInput("the body is not JSON") from None
    if not isinstance(payload, dict):
        raise InvalidInput("the body is not a JSON object")
    return payload


def _why_ignored(
    event: str, action: str | None, fields: dict[str, Any], missing: str | None
) -> str | None:
    handled = INDEX_EVENTS.get(event)
    if handled is None:
        return f"event {event} is not handled"
    if action is None:
        return f"{event} without a usable action"
    if action not in handled and action not in SUGGESTION_ACTIONS.get(event, ()):
        return f"{event} action {action} is not handled"
    if fields["repository"] is None:
        return "no usable repository.full_name"
    if fields["issue_number"] is None:
        return "no usable issue.number"
    return missing


def _identity(
    event: str, action: str | None, payload: dict[str, Any]
) -> tuple[str, datetime | None, str | None]:
    """(subject, updated_at, what is missing) of an event the product may act on."""
    issue_time = _timestamp(_dig(payload, "issue", "updated_at"))
    if event == "issue_comment":
        comment_id = _dig(payload, "comment", "id")
        comment_time = _timestamp(_dig(payload, "comment", "updated_at"))
        if not _is_int(comment_id, _MAX_ID):
            return "", None, "no usable comment.id"
        if comment_time is None:
            return "", None, "no usable comment.updated_at (needed to tell a replay apart)"
        return f"comment:{comment_id}", max(filter(None, (issue_time, comment_time))), None
    if issue_time is None:
        return "", None, "no usable issue.updated_at (needed to tell a replay apart)"
    if action == "suggestion_dismissed":
        suggestion = _dig(payload, "suggestion", "id")
        if not _is_int(suggestion, _MAX_ID):
            return "", None, "no usable suggestion.id"
        return f"suggestion:{suggestion}", issue_time, None
    label = _dig(payload, "label", "name") if action in ("labeled", "unlabeled") else None
    return (f"label:{label}" if _safe_text(label, 100) else ""), issue_time, None


def _dig(payload: dict[str, Any], outer: str, inner: str) -> Any:
    value = payload.get(outer)
    return value.get(inner) if isinstance(value, dict) else None


def _name(value: Any) -> str | None:
    return value if isinstance(value, str) and _NAME.fullmatch(value) else None


def _is_int(value: Any, below: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < below


def _safe_text(value: Any, limit: int) -> bool:
    """Text Postgres can store as is: no NUL, no lone surrogate, not too long."""
    if not isinstance(value, str) or not 0 < len(value) <= limit or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or not _TIMESTAMP.fullmatch(value):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:  # the right shape, an impossible date (month 13)
        return None
