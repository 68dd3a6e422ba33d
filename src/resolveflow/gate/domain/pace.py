"""Pacing writes the way the outside systems ask (issue 17). Pure.

GitHub allows at most 80 content-creating requests a minute and 500 an hour per credential
(secondary limits) and asks for at least a second between mutating requests; GitLab and mail
servers have limits of their own. Every mutating request therefore takes a *slot* for its
credential first: a token bucket that holds ``burst`` tokens and refills at ``refill_per_second``,
and at least ``min_interval_seconds`` between two slots. In any window of ``w`` seconds a
credential then gets at most ``min(burst + refill * w, w / min_interval + 1)`` slots, so the
GitHub defaults (1 s, burst 60, 440 more an hour) stay under both limits: at most 61 in a
minute, 500 in an hour.

A slot is handed out in the future when the bucket is empty or the last slot was too recent;
the caller then waits for it (briefly, in place) or gives the execution back to the queue with
the slot held for it, so the order in which executions were claimed is the order they are sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

from resolveflow.domain.vocabulary import Credential


class PaceTarget(StrEnum):
    """The outside system a write goes to; each has its own limits."""

    GITHUB = "github"
    GITLAB = "gitlab"
    SMTP = "smtp"

    @property
    def display(self) -> str:
        return {"github": "GitHub", "gitlab": "GitLab", "smtp": "the mail server"}[self.value]


@dataclass(frozen=True)
class Pace:
    min_interval_seconds: float
    burst: int
    refill_per_second: float

    def __post_init__(self) -> None:
        if self.min_interval_seconds < 0 or self.burst < 1 or self.refill_per_second <= 0:
            raise ValueError("a pace needs an interval >= 0, a burst >= 1 and a refill > 0")

    @classmethod
    def per_hour(cls, min_interval_seconds: float, burst: int, per_hour: int) -> Pace:
        """The pace that never gives more than ``per_hour`` slots in any hour."""
        if per_hour <= burst:
            raise ValueError("the hourly allowance must be larger than the burst")
        return cls(min_interval_seconds, burst, (per_hour - burst) / 3600.0)

    def most_in(self, window_seconds: float) -> float:
        """The most slots any window of this length can hold."""
        by_interval = (
            window_seconds / self.min_interval_seconds + 1
            if self.min_interval_seconds > 0
            else float("inf")
        )
        return min(self.burst + self.refill_per_second * window_seconds, by_interval)


@dataclass(frozen=True)
class Bucket:
    """A credential's pace state as stored: tokens left at ``refilled_at``, and the earliest
    time the next slot may be."""

    tokens: float
    refilled_at: datetime
    next_at: datetime


def full_bucket(pace: Pace, now: datetime) -> Bucket:
    return Bucket(float(pace.burst), now, now)


def reserve(pace: Pace, bucket: Bucket, now: datetime) -> tuple[datetime, Bucket]:
    """The next slot (never before ``now``) and the bucket after it was taken."""
    at = max(now, bucket.next_at)
    elapsed = max(0.0, (at - bucket.refilled_at).total_seconds())
    tokens = min(float(pace.burst), bucket.tokens + elapsed * pace.refill_per_second)
    if tokens < 1.0:  # wait until the bucket holds one whole token
        at += timedelta(seconds=(1.0 - tokens) / pace.refill_per_second)
        tokens = 1.0
    return at, Bucket(tokens - 1.0, at, at + timedelta(seconds=pace.min_interval_seconds))


def pace_key(
    target: PaceTarget,
    credential: Credential,
    fingerprint: str | None,
    tenant: UUID,
    installation: int | None = None,
) -> str:
    """Whose allowance a write uses. An approver's own GitHub token is theirs across tenants (its
    fingerprint); GitHub's service token is the deployment's, or, with a GitHub App, the
    installation's (GitHub limits each installation on its own); GitLab and mail credentials are
    each tenant's."""
    if target is PaceTarget.GITHUB:
        if credential is Credential.APPROVER and fingerprint:
            return f"github:approver:{fingerprint}"
        if installation is not None:
            return f"github:installation:{installation}"
        return "github:service"
    return f"{target.value}:tenant:{tenant}"


def held_slot_usable(held: datetime | None, now: datetime, grace_seconds: float) -> bool:
    """A slot held for an execution is used when it is due and not stale: one missed by more
    than the grace (workers busy or down) is given up, so late executions do not all go at once."""
    return (
        held is not None
        and held <= now + timedelta(seconds=0.05)
        and (now - held).total_seconds() <= grace_seconds
    )


def waiting_detail(target: PaceTarget, at: datetime) -> str:
    return f"waiting for {target.display}'s pace, next at {at:%H:%M:%S} UTC"
