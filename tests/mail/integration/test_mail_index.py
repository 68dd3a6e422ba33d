"""Mail in the index on a real Postgres: import in every form, idempotent and in any order; the
mail search filtered by tenant and permitted mailboxes before ranking; email never in the
ordinary search, ask or the passage page; forget at once and for good."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import psycopg
import pytest

from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.ask.answering import AskService, ask
from resolveflow.ask.passages import passage
from resolveflow.domain.records import Role
from resolveflow.errors import NotFound
from resolveflow.mail.domain.message import MailMessage
from resolveflow.mail.importer import ImportReport, MailImporter
from resolveflow.mail.loader import MailSource
from resolveflow.mail.search import MailSearcher
from resolveflow.mail.store.messages import thread
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.rebuild import rebuild
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.search import Searcher
from resolveflow.store.database import Database

MAIL = Path(__file__).parents[2] / "data" / "mail"
SUPPORT, BILLING = "support@acme.example", "billing@acme.example"
REFUND = "Please refund the double charge on my card for the June invoice"


def importer(db: Database) -> MailImporter:
    return MailImporter(db, Indexer(db, HashingEmbedder()))


def load(db: Database, tenant: UUID, mailbox: str, path: Path) -> ImportReport:
    source = MailSource(path)
    return importer(db).run(tenant, mailbox, source, source.skipped)


def both(db: Database, name: str = "acme") -> UUID:
    tenant = admin.add_tenant(db, name).id
    load(db, tenant, SUPPORT, MAIL / "support-eml")
    load(db, tenant, BILLING, MAIL / "billing.mbox")
    return tenant


def examples(db: Database, tenant: UUID, mailboxes: set[str], text: str, k: int = 5) -> list[str]:
    found = MailSearcher(db, HashingEmbedder()).examples(tenant, frozenset(mailboxes), text, k)
    return [e.reply_message_id for e in found]


def test_each_form_imports_and_a_reimport_is_idempotent_by_message_id(db: Database) -> None:
    tenant = admin.add_tenant(db, "acme").id
    first = load(db, tenant, SUPPORT, MAIL / "support-eml")
    assert (first.read, first.new, first.known, first.examples) == (4, 4, 0, 2)
    assert first.examples_indexed == 2
    [(_, reason)] = first.skipped
    assert "no Message-ID" in reason
    again = load(db, tenant, SUPPORT, MAIL / "support-eml")
    assert (again.new, again.known, again.examples, again.examples_indexed) == (0, 4, 2, 0)
    maildir = load(db, tenant, SUPPORT, MAIL / "support-maildir")  # the same thread again
    assert (maildir.read, maildir.new, maildir.known, maildir.examples_indexed) == (2, 0, 2, 0)
    mbox = load(db, tenant, BILLING, MAIL / "billing.mbox")
    assert (mbox.read, mbox.new, mbox.examples, mbox.examples_indexed) == (4, 4, 2, 2)
    [example] = MailSearcher(db, HashingEmbedder()).examples(
        tenant, frozenset({SUPPORT}), "my password reset link expired", k=1
    )
    assert example.reply_message_id == "<rep-pw@acme.example>"
    assert example.request_message_id == "<req-pw@customer.example>"
    assert "the password reset link in your email expired" in example.request_text
    # The team's own words: no quoted request, no signature.
    assert example.reply_text.endswith("Best regards,\nAcme Support")
    assert 0.0 <= example.score <= 1.0


def test_a_reply_imported_before_its_request_is_linked_when_the_request_arrives(
    db: Database,
) -> None:
    tenant = admin.add_tenant(db, "acme").id
    reply = load(db, tenant, SUPPORT, MAIL / "support-eml" / "02-password-reply.eml")
    assert (reply.new, reply.examples) == (1, 0)
    assert examples(db, tenant, {SUPPORT}, "password reset") == []
    request = load(db, tenant, SUPPORT, MAIL / "support-eml" / "01-password-request.eml")
    assert (request.new, request.examples, request.examples_indexed) == (1, 1, 1)
    assert examples(db, tenant, {SUPPORT}, "password reset") == ["<rep-pw@acme.example>"]
    with db.tenant(tenant) as conn:
        assert thread(conn, tenant, SUPPORT, "<rep-pw@acme.example>") == [
            "<req-pw@customer.example>",
            "<rep-pw@acme.example>",
        ]


def refund_exchanges(n: int) -> list[MailMessage]:
    """``n`` billing exchanges that all match REFUND better than anything in support."""
    t0 = datetime(2024, 7, 1, tzinfo=UTC)
    found: list[MailMessage] = []
    for i in range(n):
        ask_id, reply_id = f"<refund-{i}@customer.example>", f"<refund-reply-{i}@acme.example>"
        found.append(
            MailMessage(ask_id, f"c{i}@customer.example", None, (BILLING,), (),
                        "Refund the double charge", t0 + timedelta(minutes=i), REFUND)
        )  # fmt: skip
        found.append(
            MailMessage(reply_id, BILLING, None, (f"c{i}@customer.example",), (),
                        "Re: Refund the double charge", t0 + timedelta(minutes=i, seconds=30),
                        f"We refunded the double charge on your card ({i}).",
                        in_reply_to=ask_id, references=(ask_id,))
        )  # fmt: skip
    return found


def test_a_permitted_mailbox_never_gets_another_mailboxs_example_and_still_gets_k(
    db: Database,
) -> None:
    tenant = both(db)
    importer(db).run(tenant, BILLING, refund_exchanges(40))  # more than a search's candidates
    assert examples(db, tenant, {BILLING}, REFUND, k=1)[0].startswith("<refund-reply-")
    found = examples(db, tenant, {SUPPORT}, REFUND, k=2)
    assert sorted(found) == ["<rep-csv@acme.example>", "<rep-pw@acme.example>"]
    assert examples(db, tenant, set(), REFUND) == []
    other = admin.add_tenant(db, "globex").id  # same mailbox name, another tenant: nothing
    assert examples(db, other, {SUPPORT, BILLING}, REFUND) == []


def test_email_never_appears_in_the_ordinary_search_ask_or_the_passage_page(
    db: Database, superuser: psycopg.Connection[object]
) -> None:
    world_tenant = admin.add_tenant(db, "acme")
    tenant = world_tenant.id
    issue = SourceDocument("test", "1", "issue", "Login page rejects valid passwords", "Steps.")
    Indexer(db, HashingEmbedder()).upsert(tenant, [issue])
    before = counts(superuser, tenant)
    load(db, tenant, SUPPORT, MAIL / "support-eml")
    load(db, tenant, BILLING, MAIL / "billing.mbox")
    searcher = Searcher(db, HashingEmbedder())
    for text in (REFUND, "password reset link expired", "CSV export last column"):
        hits = searcher.search(tenant, text, k=10)
        assert [h.kind for h in hits] == ["issue"], text
    principal = admin.add_principal(db, "acme", "rita", [Role.REQUESTER])
    answer = ask(AskService(db, searcher), tenant, "How do I reset my password?")
    assert "mail:" not in answer.model_dump_json() and "Acme Support" not in str(answer)
    mail_chunks = [
        row[0]
        for row in superuser.execute(
            "SELECT id FROM chunks WHERE tenant_id = %s AND mailbox IS NOT NULL", (tenant,)
        ).fetchall()
    ]
    assert mail_chunks
    actor = authenticate(db, principal.token)
    for chunk_id in mail_chunks:
        with pytest.raises(NotFound):
            passage(db, actor, int(str(chunk_id)))
    # The ordinary search's chunk count and term statistics do not change with mail.
    assert counts(superuser, tenant) == before


def counts(superuser: psycopg.Connection[object], tenant: UUID) -> tuple[object, ...]:
    row = superuser.execute(
        "SELECT (SELECT chunk_count FROM retrieval_indexes WHERE tenant_id = %s),"
        " (SELECT count(*) FROM chunk_terms WHERE tenant_id = %s),"
        " (SELECT coalesce(sum(chunks), 0) FROM term_stats WHERE tenant_id = %s)",
        (tenant, tenant, tenant),
    ).fetchone()
    assert row is not None
    return tuple(row)


def test_forget_takes_effect_at_once_and_survives_reimport(db: Database) -> None:
    tenant = both(db)
    assert "<rep-refund@acme.example>" in examples(db, tenant, {BILLING}, REFUND)
    removed = importer(db).forget(tenant, BILLING, "rep-refund@acme.example")
    assert removed == ["<rep-refund@acme.example>"]
    assert examples(db, tenant, {BILLING}, REFUND) == ["<rep-address@acme.example>"]
    again = load(db, tenant, BILLING, MAIL / "billing.mbox")
    assert (again.new, again.examples, again.examples_indexed) == (0, 1, 0)
    assert examples(db, tenant, {BILLING}, REFUND) == ["<rep-address@acme.example>"]
    # Forgetting a request removes the example built on it.
    assert importer(db).forget(tenant, SUPPORT, "<req-csv@customer.example>") == [
        "<rep-csv@acme.example>"
    ]
    assert examples(db, tenant, {SUPPORT}, "CSV export") == ["<rep-pw@acme.example>"]
    with pytest.raises(NotFound, match=r"no message <nope@x\.example> in mailbox"):
        importer(db).forget(tenant, SUPPORT, "<nope@x.example>")


def test_index_rebuild_moves_the_mail_vectors_with_the_rest(db: Database) -> None:
    tenant = both(db)
    wider = HashingEmbedder(dimensions=384)
    rebuild(db, wider, tenant)
    found = MailSearcher(db, wider).examples(tenant, frozenset({BILLING}), REFUND, k=1)
    assert [e.reply_message_id for e in found] == ["<rep-refund@acme.example>"]
