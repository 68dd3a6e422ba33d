"""The message about one waiting proposal: what is proposed in one line, and the inbox link.

What is never in it: an approve link or anything bearing the digest (approving happens in the
inbox, against the exact action), a comment's or an issue's body, and anything of an email but
that there is one (mail is private to a mailbox's grants, docs/email.md). A title or a label is
text from outside (an issue's author, a model): it is flattened to one line, cut, and escaped for
Slack, whose ``<...>`` would otherwise mention ``@channel`` or hide a link.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from resolveflow.domain.vocabulary import ActionKind, NotificationKind
from resolveflow.errors import ResolveFlowError
from resolveflow.gate.domain.actions import (
    EmailSendAction,
    GitHubIssueAction,
    GitHubIssueCloseDuplicateAction,
    GitHubIssueCreateAction,
    GitLabIssueCreateAction,
    parse_action,
)

LINE_LIMIT = 200  # the "what" line; a title past it is cut


class NotifyFormat(StrEnum):
    SLACK = "slack"  # {"text": ...}: Slack, Mattermost, Rocket.Chat, Teams' Slack-compatible hooks
    JSON = "json"  # NotificationPayload, signed (HMAC-SHA256)


@dataclass(frozen=True)
class Notice:
    """One message to send: the proposal version it is about and what a reader needs."""

    kind: NotificationKind
    tenant: str
    proposal_id: UUID
    action_kind: str
    what: str  # one line, from ``describe``
    inbox_url: str
    window_closes_at: datetime


class NotificationPayload(BaseModel):
    """The JSON format's body (``RESOLVEFLOW_NOTIFY_FORMAT=json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["resolveflow.proposal.waiting", "resolveflow.proposal.closing"]
    tenant: str
    proposal_id: UUID
    action_kind: str
    summary: str
    inbox_url: str
    window_closes_at: datetime


def flat(text: str, limit: int = LINE_LIMIT) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def describe(action: dict[str, Any]) -> str:
    """What is proposed, in one line of words (never a body, never an email's details)."""
    try:
        parsed = parse_action(action)
    except ResolveFlowError:  # a stored action no kind reads now
        return flat(f"a proposal of kind {action.get('kind', 'unknown')}")
    match parsed:
        case GitHubIssueAction():
            parts = (["a comment"] if parsed.comment else []) + (
                [f"labels {', '.join(parsed.labels)}"] if parsed.labels else []
            )
            return flat(f"{' and '.join(parts) or 'nothing'} on {parsed.summary}")
        case GitHubIssueCreateAction():
            return flat(f"a new issue in {parsed.target.repository}: {parsed.title}")
        case GitLabIssueCreateAction():
            return flat(f"a new GitLab issue in {parsed.target.project}: {parsed.title}")
        case GitHubIssueCloseDuplicateAction():
            target = f"{parsed.target.repository}#{parsed.target.issue}"
            return flat(f"close {target} as a duplicate of #{parsed.original}")
        case EmailSendAction():
            return "an email reply (mail is private: open the inbox to read it)"
    return flat(f"a proposal of kind {parsed.kind}")  # pragma: no cover - a new kind


_WHERE = {
    ActionKind.GITHUB_ISSUE.value: "GitHub",
    ActionKind.GITHUB_ISSUE_CREATE.value: "GitHub",
    ActionKind.GITHUB_ISSUE_CLOSE_DUPLICATE.value: "GitHub",
    ActionKind.GITLAB_ISSUE_CREATE.value: "GitLab",
    ActionKind.EMAIL_SEND.value: "Email",
}


def headline(notice: Notice) -> str:
    when = notice.window_closes_at.isoformat(timespec="minutes")
    if notice.kind is NotificationKind.CLOSING:
        return f"Approval window closes at {when} ({notice.tenant})"
    return f"Waiting for a decision ({notice.tenant}, open until {when})"


def _slack_escape(text: str) -> str:
    # Slack's own rule: these three, and nothing else, are control characters in message text.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(notice: Notice) -> dict[str, str]:
    where = _WHERE.get(notice.action_kind, "")
    what = f"{where}: {notice.what}" if where else notice.what
    text = (
        f"{_slack_escape(headline(notice))}\n{_slack_escape(what)}\n"
        f"<{notice.inbox_url}|Open in the inbox>"
    )
    return {"text": text}


def json_body(notice: Notice) -> NotificationPayload:
    return NotificationPayload(
        type=f"resolveflow.proposal.{notice.kind.value}",
        tenant=notice.tenant,
        proposal_id=notice.proposal_id,
        action_kind=notice.action_kind,
        summary=notice.what,
        inbox_url=notice.inbox_url,
        window_closes_at=notice.window_closes_at,
    )


def encoded(notice: Notice, fmt: NotifyFormat) -> bytes:
    """The request body, as sent and as signed."""
    if fmt is NotifyFormat.SLACK:
        return json.dumps(slack_body(notice), ensure_ascii=False).encode()
    return json_body(notice).model_dump_json().encode()


def retry_after(attempts: int, base_seconds: float, cap_seconds: float) -> float:
    """The wait before the next attempt, doubling from ``base_seconds`` after each failed one."""
    return min(cap_seconds, base_seconds * float(2 ** max(attempts - 1, 0)))


def trial_body(tenant: str, fmt: NotifyFormat) -> bytes:
    """What ``notify test`` sends: says which tenant the hook is for and that nothing waits."""
    line = (
        f"ResolveFlow: proposals of {_slack_escape(tenant)} that wait for a decision are told here"
    )
    if fmt is NotifyFormat.SLACK:
        return json.dumps({"text": f"{line} (a test: nothing waits)."}).encode()
    return json.dumps({"type": "resolveflow.test", "tenant": tenant}).encode()
