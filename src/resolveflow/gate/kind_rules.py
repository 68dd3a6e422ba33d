"""What the gate asks of each action kind about reading and approving its proposals, without
importing the package that carries it out (issue 27).

A kind's rules say who may read its records (a proposal, its execution, their audit) and the
facts its approval checks need beyond the gate's own. The gate's kinds (GitHub's and GitLab's)
are readable by anyone in the tenant and bring no facts; a product's kind (mail's
``email.send``: the mailbox grant, the checked draft) is installed by the wiring
(``bootstrap/kinds.py``) before anything is read. A kind no rules were installed for is read by
no one: forgetting them hides records rather than showing them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from resolveflow.domain.records import Principal, Proposal
from resolveflow.domain.vocabulary import ActionKind
from resolveflow.errors import NotAuthorized
from resolveflow.store.database import Connection

StoredAction = Mapping[str, Any]  # a proposal's action as stored (canonical JSON)


@dataclass(frozen=True)
class KindFacts:
    """A kind's part of the approval facts (``gate.domain.policy.ApprovalFacts``)."""

    granted_mailboxes: frozenset[str] = frozenset()  # the viewer's mailbox grants
    checked_draft: bool | None = None  # None: no draft made the lineage


class KindReader(Protocol):
    """One principal's reading of one kind's records."""

    def may_read(self, action: StoredAction) -> bool: ...

    def require(self, action: StoredAction) -> None:
        """``NotAuthorized`` (403) when the principal may not read this record."""
        ...

    def hidden(self, action: StoredAction) -> str:
        """What a list shows in place of what the principal may not read."""
        ...


class KindRules(Protocol):
    kind: ActionKind

    def reader(self, conn: Connection, principal: Principal) -> KindReader: ...

    def approval_facts(
        self, conn: Connection, viewer: Principal, proposal: Proposal
    ) -> KindFacts: ...


class _Open:
    """A kind read by anyone in the tenant, as the tenant bounds every read."""

    def may_read(self, action: StoredAction) -> bool:
        return True

    def require(self, action: StoredAction) -> None:
        return None

    def hidden(self, action: StoredAction) -> str:
        return ""


@dataclass(frozen=True)
class _Unreadable:
    kind: str

    def may_read(self, action: StoredAction) -> bool:
        return False

    def require(self, action: StoredAction) -> None:
        raise NotAuthorized(self.hidden(action))

    def hidden(self, action: StoredAction) -> str:
        return f"hidden: no reading rules for {self.kind} in this process"


@dataclass(frozen=True)
class _Rules:
    """The gate's own kinds' rules (open), and a product kind's when none were installed."""

    read: KindReader

    def reader(self, conn: Connection, principal: Principal) -> KindReader:
        return self.read

    def approval_facts(self, conn: Connection, viewer: Principal, proposal: Proposal) -> KindFacts:
        return KindFacts()


_OPEN = _Rules(_Open())
_OWN = (
    ActionKind.GITHUB_ISSUE,
    ActionKind.GITHUB_ISSUE_CREATE,
    ActionKind.GITLAB_ISSUE_CREATE,
    ActionKind.GITHUB_ISSUE_CLOSE_DUPLICATE,
)
_installed: dict[str, KindRules | _Rules] = {kind.value: _OPEN for kind in _OWN}
_KINDS = frozenset(kind.value for kind in ActionKind)


def install(rules: Iterable[KindRules]) -> None:
    """The wiring's: each product kind's rules, once per process (the same object again is fine)."""
    for each in rules:
        present = _installed.get(each.kind.value)
        if present is not None and present is not each:
            raise RuntimeError(f"rules for {each.kind} are installed twice")
        _installed[each.kind.value] = each


def _fallback(kind: str) -> _Rules:
    # Not a kind at all: parsing the action refuses it, as it always did.
    return _Rules(_Unreadable(kind)) if kind in _KINDS else _OPEN


def _kind(action: StoredAction | None) -> str:
    return str(action.get("kind")) if action else ""


class Readers:
    """One principal's reading of every kind (made inside a transaction, used after it: each
    kind reads what it needs when made)."""

    def __init__(self, by_kind: Mapping[str, KindReader]) -> None:
        self._by_kind = by_kind

    def _of(self, action: StoredAction) -> KindReader:
        kind = _kind(action)
        found = self._by_kind.get(kind)
        return found if found is not None else _fallback(kind).read

    def may_read(self, action: StoredAction) -> bool:
        return self._of(action).may_read(action)

    def hidden(self, action: StoredAction) -> str:
        return self._of(action).hidden(action)


def readers(conn: Connection, principal: Principal) -> Readers:
    return Readers({kind: rules.reader(conn, principal) for kind, rules in _installed.items()})


def _rules(action: StoredAction | None) -> KindRules | _Rules:
    kind = _kind(action)
    return _installed.get(kind) or _fallback(kind)


def require_readable(conn: Connection, principal: Principal, action: StoredAction) -> None:
    """Refuse (403) a principal's read of one record of ``action``'s kind, as its rules say."""
    _rules(action).reader(conn, principal).require(action)


def approval_facts(conn: Connection, viewer: Principal, proposal: Proposal) -> KindFacts:
    return _rules(proposal.action).approval_facts(conn, viewer, proposal)
