"""What the gate is given of the packages above it (issue 27): the kinds they carry out (mail's
``email.send``: its executor, its reading and approval rules), and the runs proposals belong to
(triage's). ``install`` puts the rules and the runs in place for the process; ``offered`` gives
the executor and the reconciler the offered kinds' executors over this app's mail."""

from __future__ import annotations

from resolveflow.gate import kind_rules, run_records
from resolveflow.gate.domain.actions import ActionKind
from resolveflow.gate.kinds import SPECS
from resolveflow.gate.kinds.base import KindOffer, KindSpec
from resolveflow.mail import kind as email_send
from resolveflow.mail.kind import MailAccess
from resolveflow.mail.kind_rules import RULES as EMAIL_SEND_RULES
from resolveflow.triage.run_records import TRIAGE_RUNS

# Every kind's declarations: the gate's own and the offered ones (``kinds list``, the docs).
KIND_SPECS: dict[ActionKind, KindSpec] = {**SPECS, ActionKind.EMAIL_SEND: email_send.SPEC}
# A kind without an executor could be approved but never sent.
if set(KIND_SPECS) != set(ActionKind):
    raise RuntimeError(f"no executor for {sorted(set(ActionKind) - set(KIND_SPECS))}")


def install() -> None:
    """Before anything reads a proposal or decides: the CLI, the web app, the worker, the tests
    all import the wiring (``bootstrap.app`` calls this once)."""
    kind_rules.install([EMAIL_SEND_RULES])
    run_records.install(TRIAGE_RUNS)


def offered(mail: MailAccess) -> tuple[KindOffer, ...]:
    """The products' kinds' executors, over this app's mail."""
    return (email_send.offer(mail),)
