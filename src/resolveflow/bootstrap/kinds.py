"""What the gate is given of the packages above it (issue 27): the kinds they carry out (mail's
``email.send``: its executor, its reading and approval rules), and the runs proposals belong to
(triage's). ``install`` puts the rules and the runs in place for the process; ``offered`` gives
the executor and the reconciler the offered kinds' executors over this app's mail.

Every process imports this (through ``bootstrap.app``), a quick CLI command too: the kinds'
executors (``gate.kinds``, ``mail.kind``: the adapters, the recorder, the execution store) load
only when their declarations or executors are first asked for (``KIND_SPECS``, ``offered``).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from resolveflow.gate import kind_rules, run_records
from resolveflow.mail.kind_rules import RULES as EMAIL_SEND_RULES
from resolveflow.triage.run_records import TRIAGE_RUNS

if TYPE_CHECKING:
    from resolveflow.domain.vocabulary import ActionKind
    from resolveflow.gate.kinds.base import KindOffer, KindSpec
    from resolveflow.mail.kind import MailAccess


@cache
def kind_specs() -> dict[ActionKind, KindSpec]:
    """Every kind's declarations: the gate's own and the offered ones (``kinds list``, the docs).
    ``RuntimeError`` when a kind has none, as a kind without an executor could be approved but
    never sent."""
    from resolveflow.domain.vocabulary import ActionKind
    from resolveflow.gate.kinds import SPECS
    from resolveflow.mail import kind as email_send

    specs = {**SPECS, ActionKind.EMAIL_SEND: email_send.SPEC}
    if set(specs) != set(ActionKind):
        raise RuntimeError(f"no executor for {sorted(set(ActionKind) - set(specs))}")
    return specs


def __getattr__(name: str) -> dict[ActionKind, KindSpec]:
    # ``KIND_SPECS``, the constant this module has always had, built on first use.
    if name == "KIND_SPECS":
        return kind_specs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def install() -> None:
    """Before anything reads a proposal or decides: the CLI, the web app, the worker, the tests
    all import the wiring (``bootstrap.app`` calls this once)."""
    kind_rules.install([EMAIL_SEND_RULES])
    run_records.install(TRIAGE_RUNS)


def offered(mail: MailAccess) -> tuple[KindOffer, ...]:
    """The products' kinds' executors, over this app's mail."""
    from resolveflow.mail import kind as email_send

    kind_specs()  # every kind has an executor, or nothing is executed
    return (email_send.offer(mail),)
