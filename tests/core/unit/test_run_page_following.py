"""When the run page keeps asking for its status (issue 29): the execution settles before the run
does (the comment is posted, then the run records it and completes), so a page that stopped at
the execution's final state said "approved, being carried out" under a posted comment."""

from __future__ import annotations

from typing import Any

import pytest

from resolveflow.web.pages import _progress


def _view(status: str, decision: str | None, state: str | None) -> dict[str, Any]:
    execution = {"id": "e", "state": state} if state else None
    return {"status": status, "proposal": {"decision": decision, "execution": execution}}


@pytest.mark.parametrize(
    ("status", "decision", "state", "following"),
    [
        ("running", None, None, True),  # evidence is being gathered
        ("awaiting_approval", None, None, False),  # nothing moves until someone decides
        ("awaiting_approval", "approved", None, True),  # the worker picks it up in a moment
        ("executing", "approved", "pending", True),
        ("executing", "approved", "sent", True),  # posted; the run has not completed yet
        ("completed", "approved", "sent", False),
        ("executing", "approved", "unknown", False),  # only a person or reconciliation moves it
        ("failed", "approved", "failed", False),
        ("rejected", "rejected", None, False),
    ],
)
def test_the_page_follows_the_run_until_it_settles(
    status: str, decision: str | None, state: str | None, following: bool
) -> None:
    assert _progress(_view(status, decision, state))["following"] is following
