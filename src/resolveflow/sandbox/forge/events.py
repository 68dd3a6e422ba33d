"""An issue's history: the seeding functions tests call, and the REST route over it.

Route (``ROUTES``): ``GET /repos/{o}/{r}/issues/{n}/events``, oldest first (by ``created_at``,
then id), paginated with ``Link`` like every list.

What records an event, as on GitHub: a label put on an issue when it is created (over HTTP or
seeded: by its author, at its ``created_at``), ``POST .../issues/{n}/labels`` for each label the
issue did not carry yet (``labeled``, by the token's login, now), ``DELETE
.../issues/{n}/labels/{name}`` (``unlabeled``), and ``add_issue_event`` (any actor and time).

The payloads follow githubkit's ``LabeledIssueEvent`` and ``UnlabeledIssueEvent`` (the members of
the union its typed ``issues.list_events`` validates against) and GitHub's generic ``IssueEvent``
schema. ``closed`` and ``reopened`` match only the latter: GitHub sends them on this endpoint, but
githubkit 0.16's union has no member for them (see ``adapters.github.reads.list_issue_events``).
"""

from __future__ import annotations

from typing import Any

from resolveflow.sandbox.forge import payloads
from resolveflow.sandbox.forge.edits import change_state
from resolveflow.sandbox.forge.model import (
    EVENT_KINDS,
    EventRecord,
    FakeRequest,
    Timestamp,
    check_choice,
    timestamp,
)
from resolveflow.sandbox.forge.routing import REPO, Route, route
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.loopback import Reply

NODE_PREFIX = {
    "labeled": "LE",
    "unlabeled": "ULE",
    "closed": "CE",
    "reopened": "REE",
    "renamed": "RTE",
}
STATE_REASON = {"closed": "completed", "reopened": "reopened"}

# --- seeding and inspection (each takes the lock) ------------------------------------------


def add_issue_event(
    forge: ForgeState,
    full_name: str,
    number: int,
    event: str,
    *,
    actor: str = "octocat",
    label: str | None = None,
    created_at: Timestamp = None,
) -> int:
    """Seed one event by ``actor`` at ``created_at`` (default now) and return its id.

    The event also happens, so the issue and its history agree: ``labeled`` puts ``label`` on
    the issue (creating it in the repository if it is new), ``unlabeled`` takes it off,
    ``closed``/``reopened`` set the state (and ``closed_at``). An event that could not happen
    (a label the issue already carries or does not carry, closing a closed issue) is a
    ``ValueError``. Like a seeded comment, it leaves the issue's ``updated_at`` alone.
    """
    check_choice("event", event, EVENT_KINDS)
    if (label is None) == (event in ("labeled", "unlabeled")):
        raise ValueError(f"a {event!r} event {'needs' if label is None else 'takes no'} label")
    with forge.lock:
        repo, issue = forge.repo(full_name), forge.issue(full_name, number)
        at = timestamp(created_at, payloads.now_iso()) or payloads.now_iso()
        before = len(issue.events)
        if event == "labeled" and label is not None:
            forge.label_issue(repo, issue, label, actor, at)
        elif event == "unlabeled" and label is not None:
            forge.unlabel_issue(repo, issue, label, actor, at)
        elif event in ("closed", "reopened") and (issue.state == "open") == (event == "closed"):
            change_state(forge, issue, "closed" if event == "closed" else "open", None, actor, at)
        if len(issue.events) == before:
            raise ValueError(f"issue {full_name}#{number} cannot be {event} now ({label=})")
        return issue.events[-1].id


def issue_events(forge: ForgeState, full_name: str, number: int) -> list[dict[str, Any]]:
    """The issue's events as GitHub's JSON, in the order the endpoint lists them."""
    with forge.lock:
        return _payloads(forge, full_name, number)


# --- the route (lock held) -----------------------------------------------------------------


def list_issue_events(forge: ForgeState, request: FakeRequest) -> Reply:
    full_name, number = request.params
    return forge.paged(request, _payloads(forge, full_name, int(number)))


ROUTES: list[Route[ForgeState]] = [
    route("GET", rf"{REPO}/issues/(\d+)/events", list_issue_events),
]


# --- payloads ------------------------------------------------------------------------------


def _payloads(forge: ForgeState, full_name: str, number: int) -> list[dict[str, Any]]:
    records = sorted(forge.issue(full_name, number).events, key=lambda e: (e.created_at, e.id))
    return [event_payload(forge.url, full_name, record) for record in records]


def event_payload(api: str, full_name: str, record: EventRecord) -> dict[str, Any]:
    """One event as ``GET .../issues/{n}/events`` lists it (every field the schemas require)."""
    payload: dict[str, Any] = {
        "id": record.id,
        "node_id": payloads.node_id(NODE_PREFIX[record.event], record.id),
        "url": f"{api}/repos/{full_name}/issues/events/{record.id}",
        "actor": payloads.simple_user(api, api, record.actor),
        "event": record.event,
        "commit_id": None,
        "commit_url": None,
        "created_at": record.created_at,
        "performed_via_github_app": None,
    }
    if record.label is not None:
        payload["label"] = {
            "name": record.label,
            "color": record.label_color or payloads.NEW_LABEL_COLOR,
        }
    if record.event in STATE_REASON:
        payload["state_reason"] = record.state_reason or STATE_REASON[record.event]
    if record.rename is not None:
        payload["rename"] = {"from": record.rename[0], "to": record.rename[1]}
    return payload
