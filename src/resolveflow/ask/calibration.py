"""Where a tenant's own index puts "unrelated" and "related" on the cosine scale.

A cosine of 0.6 means different things in different indexes: a corpus of short alert runbooks
and one of long reference pages, a small embedder and a large one, place questions differently.
So answerability does not compare the top page's cosine with a constant; it places it between
two points measured on the tenant's own index:

- **unrelated**: the 90th percentile of the top cosine that questions about anything else reach
  (a fixed set of everyday questions on cooking, travel, pay, sport...); a page no closer than
  that is not about the question;
- **related**: the median top cosine of a fixed sample of the tenant's own page titles asked as
  questions; a page that close is about the question as much as a page is about its title.

Computed on the first ask after the index changes space or grows or shrinks by more than
``DRIFT`` of its size (about 70 exact nearest-chunk lookups, a second or two), stored per tenant
(``ask_calibrations``), and read back after that. A live index changes with every issue a
webhook brings; one more chunk among thousands moves neither point, and measuring again on each
would cost a triage run's docs part seconds every time.
"""

from __future__ import annotations

import logging
import statistics
from dataclasses import dataclass
from uuid import UUID

from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.ask.store import answers as store
from resolveflow.retrieval.chunking import query_text
from resolveflow.store import documents as documents_store
from resolveflow.store.database import Connection, Database
from resolveflow.store.documents import IndexState

logger = logging.getLogger(__name__)

TITLE_SAMPLE = 40
DRIFT = 0.05  # a share of the index's size that may change before the points are measured again
MIN_SPREAD = 0.1  # points closer than this on the cosine scale tell nothing apart
UNRELATED_QUANTILE = 0.9
# Questions about everything but software operations and its documentation. A tenant whose
# corpus is about one of these subjects raises its own "unrelated" point by a few of them only:
# the 90th percentile of thirty moves little.
UNRELATED_QUESTIONS = (
    "How long should I bake sourdough bread at high altitude?",
    "What is the best way to remove a red wine stain from a carpet?",
    "Can I bring a power bank in my checked luggage on a flight?",
    "How many vacation days do I get after five years at the company?",
    "What are the rules of offside in football?",
    "Which plants grow well on a north-facing balcony?",
    "What is the difference between a violin and a viola?",
    "How do I train my puppy to stop biting?",
    "When is the best season to visit Patagonia?",
    "How should I store fresh basil so it lasts longer?",
    "What is a good beginner routine for running a marathon?",
    "How do I change a flat tyre on a bicycle?",
    "How can I improve my chess endgame?",
    "What documents do I need to renew my passport?",
    "How do I knit a scarf with a cable pattern?",
    "Is it safe to eat raw cookie dough?",
    "How do I negotiate a higher salary after a job offer?",
    "What causes the northern lights?",
    "How do I clean the filter of a dishwasher?",
    "Why was Canberra chosen as the capital of Australia?",
    "How much water should a cactus get in winter?",
    "What happens at the end of the novel Moby-Dick?",
    "How do I plan a budget for a wedding?",
    "Why do cats purr?",
    "How do I paint a wall without leaving roller marks?",
    "What should I pack for a week of hiking in the Alps?",
    "How do I get my toddler to sleep through the night?",
    "Which wine goes well with grilled salmon?",
    "How do I claim a refund for a delayed train?",
    "What is the best way to learn to play the guitar as an adult?",
)


@dataclass(frozen=True)
class CalibrationPoints:
    unrelated: float
    related: float

    @property
    def pair(self) -> tuple[float, float]:
        return self.unrelated, self.related


# Only when an index cannot be calibrated (no titles to ask, or the points are not apart): the
# default embedder's points on the two dev corpora, rounded (docs/ask.md).
FALLBACK = CalibrationPoints(unrelated=0.25, related=0.75)


def saved_points(
    conn: Connection, tenant_id: UUID, state: IndexState | None
) -> CalibrationPoints | None:
    """The stored calibration when it was measured on the index as it is (``state``), read in
    the caller's transaction; None when it must be measured (or nothing is indexed)."""
    if state is None or state.chunk_count == 0:
        return None
    saved = store.calibration(conn, tenant_id)
    if saved is None or not still_holds(saved.space_id, saved.chunk_count, state):
        return None
    return CalibrationPoints(saved.unrelated, saved.related)


def still_holds(space_id: int, chunk_count: int, state: IndexState) -> bool:
    """Points measured on ``chunk_count`` chunks of ``space_id`` still hold for ``state``: the
    same space, and a size within ``DRIFT`` of it."""
    if space_id != state.space.id:
        return False
    return abs(state.chunk_count - chunk_count) <= DRIFT * chunk_count


def calibration_points(
    db: Database, embedder: Embedder, tenant_id: UUID, *, fresh: bool = False
) -> CalibrationPoints | None:
    """The tenant's calibration, measured now if its index changed since or ``fresh`` is asked
    (an index kept from an earlier evaluation: this code's measure, not that run's);
    ``FALLBACK`` where it cannot be measured; None when the tenant has nothing indexed."""
    with db.tenant(tenant_id) as conn:
        state = documents_store.index_state(conn, tenant_id)
        if state is None or state.chunk_count == 0:
            return None
        saved = None if fresh else saved_points(conn, tenant_id, state)
        if saved is not None:
            return saved
        titles = store.calibration_titles(conn, tenant_id, TITLE_SAMPLE)
    # Embedded outside any transaction (a second of CPU).
    unrelated_vectors = [_vector(embedder, text) for text in UNRELATED_QUESTIONS]
    title_vectors = [_vector(embedder, text) for text in titles if query_text(text)]
    with db.tenant(tenant_id) as conn:
        unrelated = _nearest(conn, tenant_id, state.space.id, unrelated_vectors)
        related = _nearest(conn, tenant_id, state.space.id, title_vectors)
        points = CalibrationPoints(
            _quantile(unrelated, UNRELATED_QUANTILE) if unrelated else FALLBACK.unrelated,
            statistics.median(related) if related else FALLBACK.related,
        )
        if points.related - points.unrelated < MIN_SPREAD:
            logger.warning("ask calibration points not apart, fallback used", extra=points.__dict__)
            points = FALLBACK
        store.save_calibration(conn, tenant_id, state.space.id, state.chunk_count, points.pair)
    logger.info(
        "ask calibrated",
        extra={
            "tenant_id": str(tenant_id),
            "unrelated": points.unrelated,
            "related": points.related,
        },
    )
    return points


def _vector(embedder: Embedder, text: str) -> str:
    return documents_store.vector_literal(embedder.embed_query(query_text(text)))


def _nearest(conn: Connection, tenant_id: UUID, space_id: int, vectors: list[str]) -> list[float]:
    found = (store.nearest_cosine(conn, tenant_id, space_id, v) for v in vectors)
    return [cosine for cosine in found if cosine is not None]


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]
