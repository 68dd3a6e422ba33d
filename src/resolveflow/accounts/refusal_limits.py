"""Refused attempts counted per client address and per tenant, in fixed windows, in this process's
memory (the sign-in link's POST, ``accounts/sign_in_links.py``).

Within its limits a refusal is answered and audited as before. Past either limit it is answered
"too many, try again in N s" (429 with Retry-After) and not audited one by one: the refusal that
first passes a limit in a window is recorded once, saying so. Nothing is written to count: a flood
of refusals costs no rows and no writes, and a valid link is still tried first, so a person's
genuine sign-in works whatever others sent. The counts live in one process (several web
processes each count their own), and at most ``max_keys`` windows are kept: past that, the oldest
go first.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum


class RefusalScope(StrEnum):
    """What refusals are counted by."""

    ADDRESS = "address"  # the client's address, as the server sees it
    TENANT = "tenant"  # the tenant the attempt named


@dataclass(frozen=True)
class Verdict:
    """What to do with one refusal."""

    retry_after: int | None  # seconds until every window past its limit ends; None: within them
    over: frozenset[RefusalScope]  # the scopes past their limit
    tripped: frozenset[RefusalScope]  # the scopes this refusal took past their limit, first

    @property
    def within(self) -> bool:
        return self.retry_after is None

    def summarised(self) -> RefusalScope | None:
        """The scope whose passing this refusal records, once: the tenant's; an address's only
        while its tenant is within its own limit (else many addresses would each add a row)."""
        if RefusalScope.TENANT in self.tripped:
            return RefusalScope.TENANT
        if RefusalScope.ADDRESS in self.tripped and RefusalScope.TENANT not in self.over:
            return RefusalScope.ADDRESS
        return None


@dataclass
class _Window:
    ends: float
    count: int = 0


class RefusalLimits:
    """Thread-safe: the web app's request threads share one."""

    def __init__(
        self,
        limits: Mapping[RefusalScope, int],
        window_seconds: float,
        *,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = dict(limits)
        self.window_seconds = window_seconds
        self._max_keys = max_keys
        self._clock = clock
        self._lock = threading.Lock()
        # Oldest window first: a key's new window is put at the end.
        self._windows: OrderedDict[tuple[RefusalScope, str], _Window] = OrderedDict()

    def refuse(self, keys: Mapping[RefusalScope, str | None]) -> Verdict:
        """Count one refusal under each key given, in order (None: not known, not counted). A
        refusal past one key's limit is not counted under the next ones: one noisy address does
        not use up its tenant's allowance, and the tenant's count bounds the refusals recorded."""
        now = self._clock()
        over: set[RefusalScope] = set()
        tripped: set[RefusalScope] = set()
        ends: list[float] = []
        with self._lock:
            for scope, key in keys.items():
                if key is None:
                    continue
                window = self._window(scope, key, now)
                if not over:
                    window.count += 1
                if window.count > self.limits[scope]:
                    over.add(scope)
                    ends.append(window.ends)
                    if window.count == self.limits[scope] + 1 and len(over) == 1:
                        tripped.add(scope)
        retry_after = max(1, math.ceil(max(ends) - now)) if ends else None
        return Verdict(retry_after, frozenset(over), frozenset(tripped))

    def _window(self, scope: RefusalScope, key: str, now: float) -> _Window:
        window = self._windows.get((scope, key))
        if window is None or window.ends <= now:
            self._windows.pop((scope, key), None)
            while len(self._windows) >= self._max_keys:
                self._windows.popitem(last=False)
            window = self._windows[(scope, key)] = _Window(now + self.window_seconds)
        return window
