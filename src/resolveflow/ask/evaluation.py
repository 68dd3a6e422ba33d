"""Answers, measured through the product's own ingestion and ``ask``.

The corpus folder is ingested into a scratch tenant (the same path as ``index docs``); each
question of the questions file (``{"id", "question", "answers": [paths relative to the corpus]}``,
``[]`` when no document answers it) is asked with the configured model (``none``: extractive).

Figures: MRR@5 and R@5 of the first right document in the ranking, over answerable questions;
the share of answered questions whose citations include a right document (every answered
question counts, so answering an unanswerable one costs here too), and the stricter share whose
first citation is right (a close runner-up quoted as well does not count); abstention precision and
recall (an abstention is right when no document answers), and the share of answerable questions
wrongly abstained. Each with its dev target. ``misses`` lists the questions that cost a figure,
with what came first instead, so that a team evaluating its own corpus sees which pages to fix.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from resolveflow.accounts.scratch import scratch_tenant
from resolveflow.adapters.embedder.protocol import Embedder
from resolveflow.ask.answering import AskService, ask
from resolveflow.ask.domain.answers import Answer, AnswerOutcome
from resolveflow.errors import InvalidInput
from resolveflow.llm.protocol import ChatModel
from resolveflow.retrieval.ingest import Indexer
from resolveflow.retrieval.search import Searcher, SearchParams
from resolveflow.retrieval.sources import read_docs_dir
from resolveflow.store.database import Database

logger = logging.getLogger(__name__)

SOURCE = "docs"
Targets = dict[str, tuple[str, float]]
# Dev targets, provider none. ``general`` (issue 28) is what any team's corpus is held to: the
# r-help questions on R's own pages, long and full of code, set it. ``runbooks`` (issue 13) keeps
# the runbook dev set at the figures it had reached.
TARGET_SETS: dict[str, Targets] = {
    "general": {
        "mrr_at_5": (">=", 0.40),
        "answerable_abstained": ("<=", 0.10),
        "abstention_precision": (">=", 0.40),
    },
    "runbooks": {
        "mrr_at_5": (">=", 0.95),
        "cited_right": (">=", 0.90),
        "abstention_precision": (">=", 0.70),
        "abstention_recall": (">=", 0.50),
        "answerable_abstained": ("<=", 0.05),
    },
}
TARGETS = TARGET_SETS["runbooks"]


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    question: Question
    rank: int | None  # of the first right document in the ranking (answerable questions)
    abstained: bool
    cited_right: bool
    first_cited_right: bool = False  # the first citation (the top document's) is a right one
    top: str | None = None  # the path of the first document of the ranking
    tentative: bool = False  # "no page answers this for sure; these may help"
    listed_right: bool = False  # a right document is among those listed (tentative)
    by_model: bool = False  # the answer is a model's (checked), not the extractive one

    @property
    def answered(self) -> bool:
        return not self.abstained and not self.tentative


class MissKind(StrEnum):
    """How a question cost a figure (one per question, the first that applies)."""

    ANSWERED_WITHOUT_SOURCE = "answered; no document answers it"
    ABSTAINED = "abstained; a document answers it"
    NOT_IN_TOP_5 = "right document not in the top 5"
    NOT_FIRST = "right document not first"
    FIRST_CITATION_WRONG = "first citation not a right document"


@dataclass(frozen=True)
class Miss:
    id: str
    kind: MissKind
    rank: int | None
    right: tuple[str, ...]
    first: str | None  # the first document of the ranking instead

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "kind": self.kind.name.lower(),
            "what": self.kind.value,
            "rank": self.rank,
            "right": list(self.right),
            "first": self.first,
        }


@dataclass(frozen=True)
class AnswerReport:
    n: int
    answerable: int
    mrr_at_5: float
    recall_at_5: float
    answered: int
    tentative: int
    tentative_listed_right: float  # answerable tentative questions with a right page listed
    cited_right: float
    first_cited_right: float  # stricter: only the first citation counts (no runner-up)
    abstained: int
    abstention_precision: float
    abstention_recall: float
    answerable_abstained: float
    model_answered: int = 0  # answers a model wrote and the code accepted

    def as_json(self) -> dict[str, float | int]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}

    def checks(self, targets: Targets | None = None) -> dict[str, dict[str, object]]:
        """Each figure with its dev target (``TARGET_SETS``; the runbooks' by default) and
        whether it is met."""
        out: dict[str, dict[str, object]] = {}
        for name, (op, target) in (targets or TARGETS).items():
            value = float(getattr(self, name))
            met = value >= target if op == ">=" else value <= target
            out[name] = {"value": round(value, 4), "target": f"{op} {target}", "met": met}
        return out


def read_questions(path: Path) -> list[Question]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    found: list[Question] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            found.append(
                Question(
                    str(record["id"]),
                    str(record["question"]),
                    tuple(str(a) for a in record.get("answers") or ()),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InvalidInput(f"{path.name} line {number}: not a question ({exc})") from None
    return found


def outcome(question: Question, answer: Answer) -> Outcome:
    paths = [doc.path for doc in answer.retrieved]
    right = set(question.answers)
    rank = next((i for i, p in enumerate(paths, start=1) if p in right), None)
    cited = any(c.path in right for c in answer.citations)
    first = bool(answer.citations) and answer.citations[0].path in right
    top = paths[0] if paths else None
    tentative = answer.outcome is AnswerOutcome.TENTATIVE
    listed = tentative and any(doc.path in right for doc in answer.related)
    rank = rank if right else None
    by_model = answer.generator not in {"extractive", "none"}
    return Outcome(question, rank, answer.abstained, cited, first, top, tentative, listed, by_model)


def miss(outcome: Outcome) -> Miss | None:
    """What this question cost, if anything."""
    question = outcome.question
    kind: MissKind | None = None
    if not question.answers:
        kind = MissKind.ANSWERED_WITHOUT_SOURCE if outcome.answered else None
    elif outcome.abstained:
        kind = MissKind.ABSTAINED
    elif outcome.rank is None or outcome.rank > 5:
        kind = MissKind.NOT_IN_TOP_5
    elif outcome.rank > 1:
        kind = MissKind.NOT_FIRST
    elif not outcome.first_cited_right:
        kind = MissKind.FIRST_CITATION_WRONG
    if kind is None:
        return None
    return Miss(question.id, kind, outcome.rank, question.answers, outcome.top)


def misses(outcomes: Sequence[Outcome]) -> list[Miss]:
    return [m for m in map(miss, outcomes) if m is not None]


def report(outcomes: Sequence[Outcome]) -> AnswerReport:
    answerable = [o for o in outcomes if o.question.answers]
    unanswerable = [o for o in outcomes if not o.question.answers]
    answered = [o for o in outcomes if o.answered]
    tentative = [o for o in outcomes if o.tentative and o.question.answers]
    abstained = [o for o in outcomes if o.abstained]
    right_abstentions = sum(1 for o in abstained if not o.question.answers)

    def share(part: int, whole: int, empty: float) -> float:
        return part / whole if whole else empty

    mrr = sum(1.0 / o.rank for o in answerable if o.rank is not None and o.rank <= 5)
    return AnswerReport(
        n=len(outcomes),
        answerable=len(answerable),
        mrr_at_5=mrr / len(answerable) if answerable else 0.0,
        recall_at_5=share(
            sum(1 for o in answerable if o.rank is not None and o.rank <= 5), len(answerable), 0.0
        ),
        answered=len(answered),
        tentative=sum(1 for o in outcomes if o.tentative),
        tentative_listed_right=share(
            sum(1 for o in tentative if o.listed_right), len(tentative), 1.0
        ),
        cited_right=share(sum(1 for o in answered if o.cited_right), len(answered), 1.0),
        first_cited_right=share(
            sum(1 for o in answered if o.first_cited_right), len(answered), 1.0
        ),
        abstained=len(abstained),
        abstention_precision=share(right_abstentions, len(abstained), 1.0),
        abstention_recall=share(right_abstentions, len(unanswerable), 1.0),
        answerable_abstained=share(sum(1 for o in answerable if o.abstained), len(answerable), 0.0),
        model_answered=sum(1 for o in outcomes if o.by_model),
    )


def evaluate_answers(
    db: Database,
    embedder: Embedder,
    corpus: Path,
    questions_file: Path,
    params: SearchParams | None = None,
    model: ChatModel | None = None,
    limit: int | None = None,
) -> tuple[AnswerReport, list[Outcome]]:
    """Ingest ``corpus`` into a scratch tenant and ask every question (the first ``limit``)."""
    questions = read_questions(questions_file)[:limit]
    documents = list(read_docs_dir(corpus, SOURCE))
    known = {doc.external_id for doc in documents}
    for question in questions:
        missing = [a for a in question.answers if a not in known]
        if missing:
            raise InvalidInput(f"question {question.id}: {missing} not in {corpus}")
    with scratch_tenant(db) as tenant_id:
        Indexer(db, embedder).upsert(tenant_id, documents)
        service = AskService(db, Searcher(db, embedder, params), model)
        outcomes = [outcome(q, ask(service, tenant_id, q.question)) for q in questions]
    result = report(outcomes)
    logger.info("answers evaluated", extra=result.as_json())
    return result, outcomes
