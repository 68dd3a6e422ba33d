"""Refine's related step on an index that holds tasks and pages: issues and pull requests are
related tasks, documents (docs, runbooks) are related pages, a source the policy marks makes its
documents tasks, and pages never cost the changes step its tasks (the search goes deeper)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import pytest

from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.refine import steps as refine
from resolveflow.refine.domain.document import RefineDocument, RefineStep, Ticket, TicketSource
from resolveflow.refine.domain.rules import RefinePolicy
from resolveflow.refine.step_runner import StepDeps, run_step
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher
from resolveflow.store.database import Database

TICKET = "CSV export crashes on n/a cells: ValueError in widgets/export/csv.py write_row"
AT = datetime(2024, 3, 1, tzinfo=UTC)


def _documents() -> list[SourceDocument]:
    issue = dict(source="github:acme/widgets", state="closed", created_at=AT)
    page = dict(source="docs", created_at=AT)
    return [
        SourceDocument(external_id="41", kind="issue", title="CSV export crashes on n/a",
                       body="ValueError in widgets/export/csv.py write_row on n/a cells", **issue),
        SourceDocument(external_id="44", kind="pull", title="Skip n/a cells in the CSV export",
                       body="Fixes #41: write_row skips n/a cells", **issue),
        # Pages worded like the ticket, so they outrank the tasks:
        SourceDocument(external_id="guide/csv.md", kind="doc", title="CSV export crashes on n/a",
                       body=TICKET, **page),
        SourceDocument(external_id="npm/install.md", kind="doc", title="Install with npm",
                       body="Run npm install to get the CSV export widgets", **page),
        SourceDocument(external_id="runbooks/export.md", kind="runbook", runbook_tag="export",
                       title="Export crashes", body=f"# Export crashes\n\n{TICKET}", **page),
        SourceDocument(source="helpdesk", external_id="T-7", kind="doc", created_at=AT,
                       title="Customer: CSV export crashes", body=TICKET),
    ]  # fmt: skip


@pytest.fixture
def tenant(db: Database) -> UUID:
    tenant_id = admin.add_tenant(db, "acme").id
    Indexer(db, HashingEmbedder()).upsert(tenant_id, _documents())
    return tenant_id


def _loaded() -> RefineDocument:
    ticket = Ticket(source=TicketSource.TEXT, title="CSV export crashes", body=TICKET)
    return RefineDocument(ticket=ticket, done=[RefineStep.LOAD])


def test_documents_are_related_pages_and_only_issues_and_pulls_are_related_tasks(
    db: Database, tenant: UUID
) -> None:
    doc = refine.related(_loaded(), Searcher(db, HashingEmbedder()), tenant)
    assert sorted(t.external_id for t in doc.related) == ["41", "44"]
    assert {t.kind for t in doc.related} == {"issue", "pull"}
    pages = {p.external_id for p in doc.pages}
    assert pages == {"guide/csv.md", "npm/install.md", "runbooks/export.md", "T-7"}
    judged = refine.relevance(doc, None)
    assert {j.external_id for j in judged.judgements} == {"41", "44"}
    assert {j.external_id for j in judged.page_judgements} == pages


def test_a_source_the_policy_marks_makes_its_documents_tasks(db: Database, tenant: UUID) -> None:
    policy = RefinePolicy(task_sources=("helpdesk",))
    deps = StepDeps(tenant_id=lambda: tenant, searcher=lambda: Searcher(db, HashingEmbedder()),
                    policy=lambda doc: policy)  # fmt: skip
    doc = run_step(RefineStep.RELATED, _loaded(), deps)  # the policy reaches the step
    assert sorted(t.external_id for t in doc.related) == ["41", "44", "T-7"]
    assert "T-7" not in {p.external_id for p in doc.pages}


def test_pages_that_fill_the_first_places_do_not_cost_the_tasks_their_places(
    db: Database, tenant: UUID
) -> None:
    searcher = Searcher(db, HashingEmbedder())
    first = searcher.search(tenant, f"CSV export crashes\n\n{TICKET}", k=2)
    assert all(h.kind in {"doc", "runbook"} for h in first)  # the pages come first at k=2
    doc = refine.related(_loaded(), searcher, tenant, k=2)
    assert sorted(t.external_id for t in doc.related) == ["41", "44"]
    assert len(doc.pages) >= 2
