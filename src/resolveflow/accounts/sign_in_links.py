"""One-time sign-in links: a way into the web pages that needs no outside service.

An operator runs ``resolveflow sign-in-link --subject S`` and hands the printed link to that
person. The link's token looks like ``rfl_<tenant id hex>_<secret>``; only its SHA-256 is stored,
bound to the principal and its tenant. It signs in once, within its lifetime (15 minutes unless
asked otherwise, at most an hour): using it sets the same session cookie a GitHub sign-in sets.
Issuing, using and refusing a link are audited.

Such a session brings no GitHub token. What the person approves is written with their own token if
one is stored (an earlier GitHub sign-in, or ``principals add --github-token-stdin``), otherwise
with the service account, as for anyone (``gate.credentials``).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from resolveflow.accounts.admin import find_tenant, operator_actor
from resolveflow.accounts.auth import hash_token
from resolveflow.accounts.refusal_limits import RefusalLimits, RefusalScope, Verdict
from resolveflow.accounts.sessions import NewSession, start_session
from resolveflow.domain.records import actor_of
from resolveflow.domain.vocabulary import LinkEvent
from resolveflow.errors import (
    AuthenticationFailed,
    InvalidInput,
    NotFound,
    ResolveFlowError,
    Unavailable,
)
from resolveflow.store import sign_in_links as link_store
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Connection, Database

_LINK = re.compile(r"^rfl_([0-9a-f]{32})_([A-Za-z0-9_-]{40,64})$")
DEFAULT_TTL_MINUTES = 15
MAX_TTL_MINUTES = 60  # the database refuses a longer one too (migration 0025)
PATH = "/auth/link"


class Refusal(StrEnum):
    """Why a link signs nobody in."""

    UNKNOWN = "unknown"
    USED = "used"
    EXPIRED = "expired"


REFUSALS: dict[Refusal, str] = {
    Refusal.UNKNOWN: "This sign-in link is not known here: it may have been copied incompletely.",
    Refusal.USED: "This sign-in link was used already: a link signs in once.",
    Refusal.EXPIRED: "This sign-in link has expired.",
}


class LinkRefused(AuthenticationFailed):
    """This sign-in link signs nobody in."""

    def __init__(self, why: Refusal) -> None:
        super().__init__(REFUSALS[why] + " Ask an operator for a new one.")
        self.why = why


@dataclass(frozen=True)
class IssuedLink:
    token: str  # shown once, in the link; only its hash is stored
    tenant: str
    subject: str
    expires_at: datetime
    ttl_minutes: int

    def url(self, base: str) -> str:
        return f"{base.rstrip('/')}{PATH}?token={self.token}"


@dataclass(frozen=True)
class LinkFor:
    """Whom a valid, unused link would sign in (shown before it is used)."""

    tenant: str
    subject: str
    expires_at: datetime


def check_ttl(minutes: int) -> int:
    if not 1 <= minutes <= MAX_TTL_MINUTES:
        raise InvalidInput(f"a sign-in link lives 1 to {MAX_TTL_MINUTES} minutes")
    return minutes


def issue(db: Database, tenant: str, subject: str, ttl_minutes: int) -> IssuedLink:
    """A new link for the principal ``subject`` of ``tenant`` (who must exist)."""
    check_ttl(ttl_minutes)
    found = find_tenant(db, tenant)
    token = f"rfl_{found.id.hex}_{secrets.token_urlsafe(32)}"
    actor = operator_actor()
    with db.tenant(found.id) as conn:
        try:
            principal = tenant_store.principal_by_subject(conn, found.id, subject)
        except NotFound:
            raise NotFound(
                f"no principal {subject!r} in tenant {tenant}: add it first with "
                f"`resolveflow principals add --subject {subject} --role approver`"
            ) from None
        link = link_store.insert_link(
            conn,
            tenant_id=found.id,
            principal_id=principal.id,
            token_hash=hash_token(token),
            issued_by=actor,
            ttl_seconds=ttl_minutes * 60,
        )
        link_store.record_event(
            conn,
            tenant_id=found.id,
            actor=actor,
            event=LinkEvent.ISSUED,
            subject_id=str(link.id),
            details={"subject": subject, "expires_at": link.expires_at.isoformat()},
        )
    return IssuedLink(token, found.name, subject, link.expires_at, ttl_minutes)


def _tenant_of(token: str) -> UUID:
    match = _LINK.match(token.strip())
    if not match:
        raise LinkRefused(Refusal.UNKNOWN)
    return UUID(hex=match.group(1))


def _refusal(stored: link_store.StoredLink | None) -> Refusal | None:
    if stored is None:
        return Refusal.UNKNOWN
    if stored.used_at is not None:
        return Refusal.USED
    return Refusal.EXPIRED if stored.expired else None


def look(db: Database, token: str) -> LinkFor:
    """Whom ``token`` would sign in, without using it; ``LinkRefused`` if it would not."""
    tenant_id = _tenant_of(token)
    token_hash = hash_token(token.strip())
    with db.tenant(tenant_id) as conn:
        stored = link_store.link_by_hash(conn, tenant_id, token_hash)
        tenant = link_store.tenant_name(conn, tenant_id)
    why = _refusal(stored)
    if why is not None or stored is None or tenant is None:
        raise LinkRefused(why or Refusal.UNKNOWN)
    return LinkFor(tenant, stored.subject, stored.expires_at)


@dataclass(frozen=True)
class Attempt:
    """Where a POST of a link came from, for the refusal limits (``accounts/refusal_limits.py``)."""

    limits: RefusalLimits
    address: str | None


class TooManyRefusals(Unavailable):
    """Too many refused sign-in attempts; try again later."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            f"Too many refused sign-in attempts: try again in {retry_after} s. A link that was "
            "not used and has not expired still works."
        )
        self.retry_after = retry_after


def sign_in(
    db: Database, token: str, session_ttl_seconds: int, attempt: Attempt | None = None
) -> NewSession:
    """Use ``token`` (once) and start a session for its principal; ``LinkRefused`` otherwise.
    The refusal is audited in its own transaction, which commits before it is raised. With
    ``attempt``, refusals past its limits raise ``TooManyRefusals`` and are not audited one by
    one; a valid link is still used, whatever was refused before."""
    try:
        tenant_id = _tenant_of(token)
    except LinkRefused:
        _refuse(attempt, None)
        raise
    token_hash = hash_token(token.strip())
    with db.tenant(tenant_id) as conn:
        used = link_store.use_link(conn, tenant_id, token_hash)
        principal = (
            tenant_store.principal_by_id(conn, tenant_id, used.principal_id) if used else None
        )
        if used is not None and principal is not None:
            link_store.record_event(
                conn,
                tenant_id=tenant_id,
                actor=actor_of(principal),
                event=LinkEvent.USED,
                subject_id=str(used.id),
                details={"subject": principal.subject},
            )
            return start_session(conn, principal, session_ttl_seconds, {"via": "sign-in link"})
        verdict = _refuse(attempt, tenant_id, raising=False)
        refused: ResolveFlowError
        if attempt is not None and verdict is not None and verdict.retry_after is not None:
            _record_limited(conn, tenant_id, verdict, attempt)
            refused = TooManyRefusals(verdict.retry_after)
        else:
            refused = LinkRefused(_record_refusal(conn, tenant_id, token_hash))
    raise refused


def _refuse(
    attempt: Attempt | None, tenant_id: UUID | None, *, raising: bool = True
) -> Verdict | None:
    """Count a refusal of ``attempt``; past a limit, raise ``TooManyRefusals`` (``raising``)."""
    if attempt is None:
        return None
    tenant = str(tenant_id) if tenant_id is not None else None
    verdict = attempt.limits.refuse(
        {RefusalScope.ADDRESS: attempt.address, RefusalScope.TENANT: tenant}
    )
    if raising and verdict.retry_after is not None:
        raise TooManyRefusals(verdict.retry_after)
    return verdict


def _record_refusal(conn: Connection, tenant_id: UUID, token_hash: str) -> Refusal:
    stored = link_store.link_by_hash(conn, tenant_id, token_hash)
    # Used or expired between the update and this read: either way, refused.
    why = _refusal(stored) or Refusal.USED
    if link_store.tenant_name(conn, tenant_id) is not None:  # else nowhere to audit it
        link_store.record_event(
            conn,
            tenant_id=tenant_id,
            actor="web",
            event=LinkEvent.REFUSED,
            subject_id=str(stored.id) if stored else token_hash[:16],
            details={"reason": why.value},
        )
    return why


def _record_limited(conn: Connection, tenant_id: UUID, verdict: Verdict, attempt: Attempt) -> None:
    """The one row that says refusals past a limit are no longer recorded, this window."""
    scope = verdict.summarised()
    if scope is None or link_store.tenant_name(conn, tenant_id) is None:
        return
    details: dict[str, object] = {
        "scope": scope.value,
        "limit": attempt.limits.limits[scope],
        "window_seconds": attempt.limits.window_seconds,
    }
    key = str(tenant_id)
    if scope is RefusalScope.ADDRESS:
        key = details["address"] = attempt.address or "unknown"
    link_store.record_event(
        conn,
        tenant_id=tenant_id,
        actor="web",
        event=LinkEvent.REFUSALS_LIMITED,
        subject_id=f"{scope.value}:{key}",
        details=details,
    )
