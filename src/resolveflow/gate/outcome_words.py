"""What became of an approved action, said in words: the sentence the CLI prints (and the JSON
carries as ``text``), from the same facts the pages show (``gate.posting.outcome``).

The plain words for an execution's state are here, below the web and the CLI, so both say the
same thing (``web/words.py`` uses this table).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from resolveflow.domain.vocabulary import ExecutionState

# The kinds that open an issue (the sentence names the issue), and the one that writes to GitLab
# with the tenant's own GitLab token, whoever approved (the sentence names the project too).
NEW_ISSUE_KINDS = frozenset({"github.issue_create", "gitlab.issue_create"})
GITLAB_KIND = "gitlab.issue_create"
EMAIL_KIND = "email.send"

DATE_FORMAT = "%Y-%m-%d %H:%M UTC"  # the one date format (web/filters.py shows it too)

EXECUTION_STATE: dict[ExecutionState, str] = {
    ExecutionState.PENDING: "waiting to be sent",
    ExecutionState.SENDING: "sending",
    ExecutionState.SENT: "posted",
    ExecutionState.PARTIAL: "partly done",
    ExecutionState.FAILED: "could not be sent",
    ExecutionState.UNKNOWN: "unknown: being reconciled",
    ExecutionState.NOT_SENT: "not sent (a person confirmed it)",
}


def shown_moment(value: object) -> str:
    """A moment (a datetime or its ISO text) in the one date format; anything else as it is."""
    found: datetime | None = value if isinstance(value, datetime) else None
    if isinstance(value, str) and value:
        try:
            found = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    if found is None:
        return str(value or "")
    return (
        (found if found.tzinfo else found.replace(tzinfo=UTC)).astimezone(UTC).strftime(DATE_FORMAT)
    )


def outcome_text(found: dict[str, Any], *, new_issue: bool) -> str:
    """``posted as @login at <time>: <url>``, ``created issue #N [in <project>] as @login at
    <time>: <url>``, or the state in words with its reason, from ``gate.posting.outcome``'s
    facts (``where``: the GitLab project a new issue was created in)."""
    state = found.get("state")
    if state is None:
        return "approved; waiting to be sent"
    if found.get("url"):
        what = f"created issue #{found['result_ref']}" if new_issue else "posted"
        where = f" in {found['where']}" if found.get("where") else ""
        who = f" as @{found['login']}" if found.get("login") else ""
        said = f"{what}{where}{who} at {shown_moment(found.get('at'))}: {found['url']}"
        if state == ExecutionState.PARTIAL.value:
            said += (
                f"; only part of it was done: {found.get('detail') or 'a later step was refused'}"
            )
        elif state == ExecutionState.PENDING.value and found.get("detail"):
            said += f"; {found['detail']}"  # a close as a duplicate waiting out its grace period
        return said
    words = EXECUTION_STATE[ExecutionState(state)]
    return f"{words}: {found['detail']}" if found.get("detail") else words
