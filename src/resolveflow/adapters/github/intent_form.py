"""The object form of ``PATCH /repos/{o}/{r}/issues/{n}``: each label as ``{"name", "rationale",
"confidence", "suggest"}`` and a closing ``state`` as ``{"value", "rationale", "confidence",
"suggest"}``, as GitHub's MCP server sends them (``update_issue_labels``, ``update_issue_state``),
and the plain form (names, ``"closed"``) for a forge that refuses it.

What is sent follows the MCP server rather than the published OpenAPI description where they
differ: confidence in capitals (``LOW``/``MEDIUM``/``HIGH``, as GitHub's suggestion and event
models also answer it), ``rationale``/``confidence``/``suggest`` left out when unset, and a plain
string for a label without any of them. A forge that refuses the object form (an older Enterprise
Server: 422 naming ``labels`` or ``state``) is remembered per API host for the life of the
process, so its next write goes plain at once.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx

from resolveflow.adapters.github.protocol import IntentNote, LabelWrite

INTENT_FIELDS = frozenset({"labels", "state"})  # the fields that have an object form

_lock = threading.Lock()
_plain_hosts: set[str] = set()


def plain_only(host: str) -> bool:
    with _lock:
        return host in _plain_hosts


def remember_plain(host: str) -> None:
    with _lock:
        _plain_hosts.add(host)


def forget_hosts() -> None:
    """Tests start each forge with a clean memory."""
    with _lock:
        _plain_hosts.clear()


def refuses_object_form(response: httpx.Response, fields: frozenset[str]) -> bool:
    """A 422 ``Validation Failed`` whose errors name one of ``fields`` (``labels``, ``state``)."""
    if response.status_code != 422:
        return False
    try:
        payload = response.json()
    except ValueError:
        return False
    errors = payload.get("errors") if isinstance(payload, dict) else None
    if not isinstance(errors, list):
        return False
    named = {str(e.get("field", "")).split("[")[0] for e in errors if isinstance(e, dict)}
    return bool(named & fields)


def _intent(note: IntentNote | None, suggest: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if note is not None:
        fields["rationale"] = note.rationale
        fields["confidence"] = note.confidence
    if suggest:
        fields["suggest"] = True
    return fields


def labels_body(labels: list[LabelWrite], object_form: bool) -> list[Any]:
    """Every label as a name, or (object form) an object when it carries an intent."""
    if not object_form:
        return [label.name for label in labels]
    items: list[Any] = []
    for label in labels:
        intent = _intent(label.note, label.suggest)
        items.append({"name": label.name, **intent} if intent else label.name)
    return items


def state_body(note: IntentNote | None, suggest: bool, object_form: bool) -> Any:
    intent = _intent(note, suggest) if object_form else {}
    return {"value": "closed", **intent} if intent else "closed"
