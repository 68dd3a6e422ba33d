"""The coverage-gap report (issue 31): the questions the tenant's documents did not answer, in
the last days, grouped by topic, the biggest first; and a proposal, through the gate, to open an
issue for a gap.

Questions are grouped by meaning: each is embedded as Ask searches it (the asker's own words)
and joins the topic whose centre is closest when that is at least ``TOPIC_COSINE``, else starts
one. A topic is shown by its question closest to the centre. Nothing is written but the
proposal, which waits for a person's approval like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import numpy as np

from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.ask.domain.gaps import GapTopic, gap_issue, shown
from resolveflow.ask.domain.question import read_question
from resolveflow.ask.store import gaps as store
from resolveflow.ask.store.gaps import UnansweredAsk
from resolveflow.domain.records import Principal, Proposal
from resolveflow.domain.vocabulary import COVERAGE_GAP_NOTE
from resolveflow.errors import InvalidInput, NotFound
from resolveflow.gate import proposals
from resolveflow.gate.quiet import DEFAULT_QUIET, Quiet
from resolveflow.retrieval.chunking import query_text
from resolveflow.store.database import Database

DAYS = 90
MAX_DAYS = 3650
MAX_ASKS = 2000  # the newest unanswered asks read
EXAMPLES = 3
# Two questions are on one topic when their meanings are at least this close (MiniLM's cosine:
# paraphrases of one question sit above 0.6, questions on neighbouring subjects below).
TOPIC_COSINE = 0.6


@dataclass(frozen=True)
class GapReport:
    days: int
    unanswered: int  # questions with no answer in those days
    topics: list[GapTopic]

    def as_json(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "unanswered": self.unanswered,
            "topics": [topic.as_json() for topic in self.topics],
        }


def gap_report(db: Database, embedder: Embedder, tenant_id: UUID, days: int = DAYS) -> GapReport:
    if not 1 <= days <= MAX_DAYS:
        raise InvalidInput(f"days must be between 1 and {MAX_DAYS}")
    since = datetime.now(UTC) - timedelta(days=days)
    with db.tenant(tenant_id) as conn:
        asks = store.unanswered_asks(conn, tenant_id, since, MAX_ASKS)
    if not asks:
        return GapReport(days, 0, [])
    vectors = np.array(
        [embedder.embed_query(query_text(read_question(a.question).search_text)) for a in asks],
        dtype=np.float64,
    ).reshape(len(asks), -1)
    groups = topics(vectors, TOPIC_COSINE)
    found = [_topic([asks[i] for i in members], vectors[members]) for members in groups]
    return GapReport(
        days, len(asks), sorted(found, key=lambda t: (-t.count, -t.last_asked.timestamp()))
    )


def topics(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Indexes of ``vectors`` grouped: each joins the group whose centre is closest when at
    least ``threshold`` close (cosine), else starts one; in the given order."""
    unit = _unit(vectors)
    groups: list[list[int]] = []
    sums: list[np.ndarray] = []
    for index, vector in enumerate(unit):
        best, closest = -1, threshold
        for g, total in enumerate(sums):
            centre = total / max(float(np.linalg.norm(total)), 1e-12)
            cosine = float(centre @ vector)
            if cosine >= closest:
                best, closest = g, cosine
        if best < 0:
            groups.append([index])
            sums.append(vector.copy())
        else:
            groups[best].append(index)
            sums[best] = sums[best] + vector
    return groups


def _unit(vectors: np.ndarray) -> np.ndarray:
    unit: np.ndarray = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return unit


def _topic(asks: list[UnansweredAsk], vectors: np.ndarray) -> GapTopic:
    """``asks`` are newest first (the store's order, kept by ``topics``)."""
    unit = _unit(vectors)
    centre = unit.sum(axis=0)
    middle = int(np.argmax(unit @ centre))
    examples = tuple(dict.fromkeys(shown(a.question) for a in asks))[:EXAMPLES]
    abstained = sum(1 for a in asks if a.abstained)
    return GapTopic(
        representative=shown(asks[middle].question),
        count=len(asks),
        abstained=abstained,
        tentative=len(asks) - abstained,
        examples=examples,
        last_asked=max(a.created_at for a in asks),
    )


def propose_gap(
    db: Database,
    principal: Principal,
    repository: str,
    report: GapReport,
    rank: int = 1,
    quiet: Quiet = DEFAULT_QUIET,
) -> tuple[GapTopic, Proposal]:
    """A ``github.issue_create`` proposal in ``repository`` (on the tenant's allowlist) for the
    ``rank``-th biggest gap of ``report`` (the principal's tenant's); it waits for a person's
    approval like any other."""
    if not 1 <= rank <= max(len(report.topics), 1):
        raise InvalidInput(f"rank must be between 1 and {max(len(report.topics), 1)}")
    if not report.topics:
        raise NotFound(
            f"no question went unanswered in the last {report.days} days: no gap to propose"
        )
    topic = report.topics[rank - 1]
    title, body = gap_issue(topic, report.days)
    proposal = proposals.create_issue_proposal(
        db,
        principal,
        repository=repository,
        title=title,
        body=body,
        labels=[],
        assignees=[],
        note=COVERAGE_GAP_NOTE,
        quiet=quiet,
    )
    return topic, proposal
