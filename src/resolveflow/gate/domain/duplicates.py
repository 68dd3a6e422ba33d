"""The rules of ``github.issue_close_duplicate`` that need no I/O: what counts as an objection to
a notice, and which originals are refused (chains and circles).

"Since the notice" is measured on the forge's own clock: the notice comment's ``created_at`` as
GitHub stored it, compared with the ``created_at`` of what happened afterwards, so no clock skew
between GitHub and us enters the decision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from resolveflow.errors import PolicyViolation

THUMBS_DOWN = "-1"
# Events on the issue that say someone wants it open or changed it: a reopen, and a title edit
# (GitHub records it as "renamed"). Body edits leave no event on GitHub's REST API; they are seen
# by comparing the issue's text with its digest at the notice (``text_digest``).
OBJECTING_EVENTS = {"reopened": "reopened the issue", "renamed": "edited the issue's title"}


@dataclass(frozen=True)
class Objection:
    who: str  # a login, or "someone" when GitHub does not say who
    how: str  # words: "commented", "reacted with a thumbs-down to the notice", ...
    at: datetime | None

    @property
    def words(self) -> str:
        when = f" at {self.at.isoformat()}" if self.at is not None else ""
        return f"{self.who} {self.how}{when}"


@dataclass(frozen=True)
class Said:
    """One thing someone did on the issue, as GitHub lists it (a comment, a reaction, an event)."""

    who: str
    what: str  # a comment: "comment"; a reaction: its content ("-1"); an event: its name
    at: datetime | None
    ref: int = 0  # the comment's or reaction's id (the notice's own id is skipped)


def text_digest(title: str, body: str) -> str:
    """What the issue said when the notice went out; a different digest later means it was edited.
    CRLF and trailing blanks are not an edit (GitHub stores bodies either way)."""
    text = f"{title.strip()}\n\n{body.replace(chr(13) + chr(10), chr(10)).strip()}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _after(moment: datetime | None, notice_at: datetime) -> bool:
    # Something GitHub gives no time for is counted: an objection must not be missed.
    return moment is None or moment >= notice_at


def _other(who: str, bot: str) -> bool:
    return who.lower() != bot.lower()


def find_objection(
    *,
    bot: str,
    notice_id: int,
    notice_at: datetime,
    comments: Iterable[Said],
    issue_reactions: Iterable[Said],
    notice_reactions: Iterable[Said],
    events: Iterable[Said],
    watched_digest: str | None,
    current_digest: str,
) -> Objection | None:
    """The first objection since the notice, or None. Objections are: a comment by anyone but
    the executor's account (``bot``); a thumbs-down on the notice, or on the issue since the
    notice, by anyone but the bot; a reopen or title edit by anyone else; the issue's title or
    body no longer what it was when the notice went out."""
    for said in comments:
        if said.ref != notice_id and _other(said.who, bot) and _after(said.at, notice_at):
            return Objection(said.who, "commented", said.at)
    for said in notice_reactions:
        if said.what == THUMBS_DOWN and _other(said.who, bot):
            return Objection(said.who, "reacted with a thumbs-down to the notice", said.at)
    for said in issue_reactions:
        if said.what == THUMBS_DOWN and _other(said.who, bot) and _after(said.at, notice_at):
            return Objection(said.who, "reacted with a thumbs-down to the issue", said.at)
    for said in events:
        how = OBJECTING_EVENTS.get(said.what)
        if how is not None and _other(said.who, bot) and _after(said.at, notice_at):
            return Objection(said.who, how, said.at)
    if watched_digest is not None and watched_digest != current_digest:
        return Objection("someone", "edited the issue's title or body", None)
    return None


@dataclass(frozen=True)
class OriginalState:
    """What is known of the proposed original: its state on GitHub and, when it is itself closed
    as a duplicate, the issue it duplicates as our own records know it (None: not known)."""

    number: int
    exists: bool
    is_pull_request: bool
    state: str  # open | closed
    state_reason: str | None
    duplicate_of: int | None


def check_original(
    issue: int, original: OriginalState, circles: Sequence[int] = (), repository: str = ""
) -> None:
    """Refuse an original that cannot be pointed to: the issue itself, a pull request, one that
    is itself closed as a duplicate (point to its original instead), or one whose own close as a
    duplicate is under way in our records (``circles``: the originals of the original's live,
    not yet carried out close-as-duplicate actions): of this issue, a circle; of another, a
    chain (point to that one instead)."""
    where = f"{repository}#" if repository else "#"
    if original.number == issue:
        raise PolicyViolation("an issue cannot be a duplicate of itself")
    if not original.exists:
        raise PolicyViolation(f"{where}{original.number} does not exist")
    if original.is_pull_request:
        raise PolicyViolation(f"{where}{original.number} is a pull request, not an issue")
    if original.state == "closed" and original.state_reason == "duplicate":
        if original.duplicate_of is not None and original.duplicate_of != issue:
            raise PolicyViolation(
                f"#{original.number} is closed as a duplicate of #{original.duplicate_of}: "
                f"propose #{original.duplicate_of} instead"
            )
        if original.duplicate_of == issue:
            raise PolicyViolation(
                f"#{original.number} is closed as a duplicate of #{issue}: a circle"
            )
        raise PolicyViolation(
            f"#{original.number} is closed as a duplicate: propose the issue it duplicates instead"
        )
    if issue in circles:
        raise PolicyViolation(
            f"#{original.number} is itself proposed to be closed as a duplicate of #{issue}: "
            "a circle; decide which one stays open"
        )
    if circles:
        raise PolicyViolation(
            f"#{original.number} is itself proposed to be closed as a duplicate of "
            f"#{circles[0]}: propose #{circles[0]} instead"
        )
