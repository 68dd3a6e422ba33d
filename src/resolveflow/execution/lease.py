"""The executor's lease settings and owner ids, shared by the gate, the recorder and the reconciler.

Kept apart from ``gate.py`` so that ``outcomes.py`` and ``reconcile.py`` can use them without
importing the gate (which imports them).
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass


def new_owner_id() -> str:
    """host:pid:random, so a lease row tells a person which process holds it."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


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

    @property
    def in_flight_seconds(self) -> float:
        """How long after an attempt row commits its request may still be on its way."""
        return self.send_slack_seconds + self.request_deadline_seconds
