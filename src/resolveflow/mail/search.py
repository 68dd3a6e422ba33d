"""The mail search: past exchanges of the permitted mailboxes most like a new request.

Only this tenant's chunks of the given mailboxes are ranked: the tenant and mailbox filter is in
the scan, before the ORDER BY ... LIMIT of both branches (exact cosine, and the query's words by
ts_rank), so a better match in a mailbox the principal may not use never takes a place, and the
caller still gets k examples from its own. Mailboxes hold few chunks next to the whole index, so
both branches are exact. Branch scores are fused like the main search (retrieval/fusion.py).
"""

from __future__ import annotations

import re
from uuid import UUID

from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.errors import InvalidInput
from resolveflow.mail.domain.mailbox import mailbox_key
from resolveflow.mail.domain.message import MailExample
from resolveflow.mail.store import messages as store
from resolveflow.retrieval.chunking import query_text
from resolveflow.retrieval.fusion import FusionParams, fuse, group_by_document
from resolveflow.retrieval.ingest import check_space
from resolveflow.store import documents as document_store
from resolveflow.store.database import Database

MAX_K = 20
MIN_CANDIDATES = 30
MAX_QUERY_WORDS = 64
_WORD = re.compile(r"[^\W_]+")


class MailSearcher:
    def __init__(self, db: Database, embedder: Embedder, fusion: FusionParams | None = None):
        self.db = db
        self.embedder = embedder
        self.fusion = fusion or FusionParams()

    def examples(
        self, tenant_id: UUID, mailboxes: frozenset[str], text: str, k: int = 5
    ) -> list[MailExample]:
        """The ``k`` past exchanges of ``mailboxes`` most like ``text``, best first, each with a
        score in [0, 1]. No mailboxes (nothing granted) or no text: none."""
        if not 1 <= k <= MAX_K:
            raise InvalidInput(f"k must be between 1 and {MAX_K}")
        permitted = sorted({mailbox_key(m) for m in mailboxes if m.strip()})
        cleaned = query_text(text)
        if not permitted or not cleaned:
            return []
        vector = document_store.vector_literal(self.embedder.embed_query(cleaned))
        with self.db.tenant(tenant_id) as conn:
            state = document_store.index_state(conn, tenant_id)
            if state is None:
                return []
            check_space(state, self.embedder.space)
            rows = store.mail_candidates(
                conn,
                {
                    "tenant_id": tenant_id,
                    "space_id": state.space.id,
                    "mailboxes": permitted,
                    "query_vector": vector,
                    "terms": _or_terms(cleaned),
                    "limit": max(MIN_CANDIDATES, 3 * k),
                },
            )
            ranked = fuse(group_by_document(rows), self.fusion)[:k]
            ids = [doc.best.external_id for doc in ranked]
            texts = {
                (row.mailbox, row.reply_id): row
                for row in store.exchange_texts(conn, tenant_id, permitted, ids)
            }
        found: list[MailExample] = []
        for doc in ranked:
            row = texts.get((doc.best.mailbox, doc.best.external_id))
            if row is None:  # forgotten between the two reads
                continue
            found.append(
                MailExample(
                    reply_message_id=row.reply_id,
                    mailbox=row.mailbox,
                    subject=row.subject,
                    request_text=row.request_text,
                    reply_text=row.reply_text,
                    score=round(min(1.0, max(0.0, doc.fused)), 6),
                    request_message_id=row.request_id,
                    replied_at=row.sent_at,
                )
            )
        return found


def _or_terms(text: str) -> str:
    """The query's words joined by "or" for websearch_to_tsquery (an OR of terms, like the main
    search's lexical branch; operators and quotes in the text are not passed on)."""
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text) if w.lower() != "or")
    return " or ".join(list(words)[:MAX_QUERY_WORDS])
