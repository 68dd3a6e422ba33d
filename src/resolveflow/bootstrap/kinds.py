"""What the gate is given of the packages above it (issue 27): the kinds they carry out (mail's
``email.send``: its executor, its reading and approval rules), and the runs proposals belong to
(triage's). ``install`` puts the rules and the runs in place for the process; ``offered`` gives
the executor and the reconciler the offered kinds' executors over this app's mail."""

from __future__ import annotations

from uuid import UUID

from resolveflow.domain.vocabulary import RunStatus
from resolveflow.gate import kind_rules, run_records
from resolveflow.gate.domain.actions import ActionKind
from resolveflow.gate.kinds import SPECS
from resolveflow.gate.kinds.base import KindOffer, KindSpec
from resolveflow.mail import kind as email_send
from resolveflow.mail.kind import MailAccess
from resolveflow.mail.kind_rules import RULES as EMAIL_SEND_RULES
from resolveflow.store.database import Connection
from resolveflow.triage.store import runs as run_store

# Every kind's declarations: the gate's own and the offered ones (``kinds list``, the docs).
KIND_SPECS: dict[ActionKind, KindSpec] = {**SPECS, ActionKind.EMAIL_SEND: email_send.SPEC}
# A kind without an executor could be approved but never sent.
if set(KIND_SPECS) != set(ActionKind):
    raise RuntimeError(f"no executor for {sorted(set(ActionKind) - set(KIND_SPECS))}")


class TriageRuns:
    """``gate.run_records.RunRecords`` over triage's run store."""

    def status(self, conn: Connection, tenant_id: UUID, run_id: UUID) -> RunStatus | None:
        run = run_store.find_run(conn, tenant_id, run_id)
        return None if run is None else RunStatus(run.status)

    def acquire_lease(
        self, conn: Connection, tenant_id: UUID, run_id: UUID, owner: str, seconds: float
    ) -> bool:
        return run_store.acquire_lease(conn, tenant_id, run_id, owner, seconds)

    def release_lease(self, conn: Connection, tenant_id: UUID, run_id: UUID, owner: str) -> None:
        run_store.release_lease(conn, tenant_id, run_id, owner)

    def labels_seen(self, conn: Connection, tenant_id: UUID, run_id: UUID) -> frozenset[str] | None:
        snapshot = run_store.snapshot_for_run(conn, tenant_id, run_id)
        seen = (snapshot.raw if snapshot else {}).get("repository_labels")
        return frozenset(str(name) for name in seen) if isinstance(seen, list) else None


TRIAGE_RUNS = TriageRuns()


def install() -> None:
    """Before anything reads a proposal or decides: the CLI, the web app, the worker, the tests
    all import the wiring (``bootstrap.app`` calls this once)."""
    kind_rules.install([EMAIL_SEND_RULES])
    run_records.install(TRIAGE_RUNS)


def offered(mail: MailAccess) -> tuple[KindOffer, ...]:
    """The products' kinds' executors, over this app's mail."""
    return (email_send.offer(mail),)
