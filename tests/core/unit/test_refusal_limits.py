"""Refusals counted per address and per tenant in fixed windows (``accounts/refusal_limits.py``),
on a clock the test moves: the limit, the Retry-After, the one summary per window, an address
past its limit not using up its tenant's allowance, the window's end, and the bound on memory."""

from __future__ import annotations

from resolveflow.accounts.refusal_limits import RefusalLimits, RefusalScope

ADDRESS, TENANT = RefusalScope.ADDRESS, RefusalScope.TENANT


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limits(clock: Clock, address: int = 3, tenant: int = 5, max_keys: int = 100) -> RefusalLimits:
    return RefusalLimits({ADDRESS: address, TENANT: tenant}, 60, max_keys=max_keys, clock=clock)


def test_past_an_address_limit_retry_after_counts_to_the_windows_end_and_one_summary() -> None:
    clock = Clock()
    counted = limits(clock)
    verdicts = []
    for _ in range(6):
        verdicts.append(counted.refuse({ADDRESS: "10.0.0.1", TENANT: "acme"}))
        clock.now += 10
    assert [v.within for v in verdicts] == [True, True, True, False, False, False]
    assert [v.retry_after for v in verdicts[3:]] == [30, 20, 10]
    assert [v.summarised() for v in verdicts] == [None, None, None, ADDRESS, None, None]
    clock.now += 10  # the window has ended: counted afresh
    assert counted.refuse({ADDRESS: "10.0.0.1", TENANT: "acme"}).within


def test_a_noisy_address_does_not_use_up_its_tenants_allowance() -> None:
    clock = Clock()
    counted = limits(clock)
    for _ in range(20):
        counted.refuse({ADDRESS: "10.0.0.1", TENANT: "acme"})
    # acme counted 3 of its 5: two more from other addresses are within, the next one is not.
    assert counted.refuse({ADDRESS: "10.0.0.2", TENANT: "acme"}).within
    assert counted.refuse({ADDRESS: "10.0.0.3", TENANT: "acme"}).within
    tripped = counted.refuse({ADDRESS: "10.0.0.4", TENANT: "acme"})
    assert tripped.over == {TENANT} and tripped.summarised() is TENANT
    # Once the tenant is past its limit, an address passing its own records nothing more.
    for _ in range(3):
        counted.refuse({ADDRESS: "10.0.0.5", TENANT: "acme"})
    fourth = counted.refuse({ADDRESS: "10.0.0.5", TENANT: "acme"})
    assert fourth.over == {ADDRESS, TENANT} and fourth.summarised() is None
    assert counted.refuse({ADDRESS: "10.0.0.9", TENANT: "globex"}).within


def test_an_unknown_tenant_counts_against_the_address_alone() -> None:
    counted = limits(Clock())
    verdicts = [counted.refuse({ADDRESS: "10.0.0.1", TENANT: None}) for _ in range(4)]
    assert [v.within for v in verdicts] == [True, True, True, False]


def test_the_windows_kept_are_bounded() -> None:
    clock = Clock()
    counted = limits(clock, address=1, max_keys=50)
    for n in range(1000):
        counted.refuse({ADDRESS: f"10.0.{n // 256}.{n % 256}", TENANT: None})
    assert len(counted._windows) == 50  # the oldest went first
    assert not counted.refuse({ADDRESS: "10.0.3.231", TENANT: None}).within  # a recent one
