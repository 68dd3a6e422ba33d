"""The mail search: past exchanges of the permitted mailboxes most like a new request.

Only this tenant's chunks of the given mailboxes are ranked: the tenant and mailbox filter is in
the scan, before the ORDER BY ... LIMIT of both branches (exact cosine, and the query's words by
ts_rank), so a better match in a mailbox the principal may not use never takes a place, and the
caller still gets k examples from its own. Mailboxes hold few chunks next to the whole index, so
both branches are exact. Branch scores are fused like the main search (retrieval/fusion.py).

Each exchange is indexed twice (``importer``): by its request and by its reply. Its relevance is
the mean of the two documents' fused scores (a side neither branch found is placed by its head's
cosine): a past exchange is a good example when its request is like the new one *and* its reply
answers it. Among the most relevant, the reply the others agree with comes first
(``agreement.by_agreement``): it is the one the drafter reuses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.errors import InvalidInput
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.domain.agreement import CONSENSUS_K, by_agreement
from resolveflow.mail.domain.message import MailExample
from resolveflow.mail.importer import REPLY_DOCUMENT, exchange_id, reply_document_id
from resolveflow.mail.store import messages as store
from resolveflow.retrieval.chunking import query_text
from resolveflow.retrieval.fusion import DocumentCandidate, FusionParams, fuse, group_by_document
from resolveflow.retrieval.ingest import check_space
from resolveflow.store import documents as document_store
from resolveflow.store.database import Connection, Database

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
        wanted = max(k, CONSENSUS_K)
        with self.db.tenant(tenant_id) as conn:
            state = document_store.index_state(conn, tenant_id)
            if state is None:
                return []
            check_space(state, self.embedder.space)
            params = {
                "tenant_id": tenant_id,
                "space_id": state.space.id,
                "mailboxes": permitted,
                "query_vector": vector,
            }
            rows = store.mail_candidates(
                conn,
                {**params, "terms": _or_terms(cleaned), "limit": max(MIN_CANDIDATES, 6 * wanted)},
            )
            sides = _sides(fuse(group_by_document(rows), self.fusion))
            self._complete(conn, params, sides)
            ranked = sorted(sides.items(), key=lambda item: (-_relevance(item[1]), item[0]))
            ranked = ranked[:wanted]
            ids = [reply_id for (_, reply_id), _ in ranked]
            texts = {
                (row.mailbox, row.reply_id): row
                for row in store.exchange_texts(conn, tenant_id, permitted, ids)
            }
        found: list[MailExample] = []
        for key, side in ranked:
            row = texts.get(key)
            if row is None:  # forgotten between the two reads
                continue
            found.append(
                MailExample(
                    reply_message_id=row.reply_id,
                    mailbox=row.mailbox,
                    subject=row.subject,
                    request_text=row.request_text,
                    reply_text=row.reply_text,
                    score=round(min(1.0, max(0.0, _relevance(side))), 6),
                    request_message_id=row.request_id,
                    replied_at=row.sent_at,
                )
            )
        return by_agreement(found)[:k]

    def _complete(
        self, conn: Connection, params: dict[str, Any], sides: dict[tuple[str, str], _Sides]
    ) -> None:
        """The side of each exchange that neither branch found, placed by its head's meaning
        alone (as a document found by the vector branch only)."""
        missing = [
            reply_document_id(reply_id) if side.request is not None else reply_id
            for (_, reply_id), side in sides.items()
            if side.request is None or side.reply is None
        ]
        if not missing:
            return
        for row in store.head_distances(conn, {**params, "external_ids": missing}):
            side = sides.get((row.mailbox, exchange_id(row.external_id)))
            if side is None or row.distance is None:
                continue
            placed = self.fusion.vector_weight * (1.0 - row.distance)
            if row.external_id.endswith(REPLY_DOCUMENT):
                side.reply = placed if side.reply is None else side.reply
            elif side.request is None:
                side.request = placed


@dataclass
class _Sides:
    """An exchange's fused scores: by its request document and by its reply document."""

    request: float | None = None
    reply: float | None = None


def _sides(
    documents: list[DocumentCandidate[store.MailCandidate]],
) -> dict[tuple[str, str], _Sides]:
    found: dict[tuple[str, str], _Sides] = {}
    for doc in documents:
        external = doc.best.external_id
        side = found.setdefault((doc.best.mailbox, exchange_id(external)), _Sides())
        if external.endswith(REPLY_DOCUMENT):
            side.reply = doc.fused
        else:
            side.request = doc.fused
    return found


def _relevance(side: _Sides) -> float:
    """The mean of what the exchange's two sides score: like the new request, and answering it.
    An index made before reply documents has the request's alone."""
    known = [score for score in (side.request, side.reply) if score is not None]
    return sum(known) / len(known) if known else 0.0


def _or_terms(text: str) -> str:
    """The query's words joined by "or" for websearch_to_tsquery (an OR of terms, like the main
    search's lexical branch; operators and quotes in the text are not passed on)."""
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text) if w.lower() != "or")
    return " or ".join(list(words)[:MAX_QUERY_WORDS])
