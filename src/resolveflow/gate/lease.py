"""The executor's lease settings and owner ids, shared by the gate, the recorder and the reconciler.

Kept apart from ``gate.py`` so that ``outcomes.py`` and ``reconcile.py`` can use them without
importing the gate (which imports them).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from uuid import UUID

from resolveflow.gate.domain.pace import Pace, PaceTarget


def new_owner_id() -> str:
    """host:pid:random, so a lease row tells a person which process holds it."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Attempt:
    """A request's committed attempt row, and when (monotonic) the request may start."""

    id: UUID
    send_by: float  # after this the request is not started at all
    send_at: float = 0.0  # its pace slot: not before this either


@dataclass(frozen=True)
class PaceSettings:
    """Write pacing (``gate/pace.py``). Empty ``paces``: nothing is paced (the library's
    default; the product's settings pace GitHub, GitLab and mail)."""

    paces: Mapping[PaceTarget, Pace] = field(default_factory=dict)
    inline_wait_seconds: float = 2.0  # below the send slack: a started attempt stays valid
    hold_grace_seconds: float = 5.0  # a held slot missed by more is given up


@dataclass(frozen=True)
class GateSettings:
    lease_seconds: float = 60.0
    rate_limit_max_waits: int = 5
    rate_limit_max_wait_seconds: float = 3600.0
    unavailable_retry_seconds: float = 30.0
    # A request starts at most ``send_slack_seconds`` after its attempt row committed (else it is
    # not sent at all) and is over ``request_deadline_seconds`` later: the adapter's hard
    # deadline plus one last socket read. No reconciler takes an execution over before both passed.
    send_slack_seconds: float = 10.0
    request_deadline_seconds: float = 50.0
    pace: PaceSettings = field(default_factory=PaceSettings)

    @property
    def in_flight_seconds(self) -> float:
        """How long after an attempt row commits its request may still be on its way."""
        return self.send_slack_seconds + self.request_deadline_seconds
