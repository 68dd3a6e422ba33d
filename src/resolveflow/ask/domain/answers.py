"""Answers to a question from a tenant's own documents: the types, the answerability rule and
the checks a model's answer must pass. Pure: no I/O.

An ``Answer`` either quotes and cites the tenant's documents or abstains; an abstention names the
closest documents as related, never as an answer. Titles, links and quoted passages always come
from the database (the service fills them in); a model only chooses which retrieved passages to
cite, by their chunk ids, and words the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from resolveflow.llm.errors import ModelOutputInvalid

ABSTENTION_TEXT = (
    "No source in this tenant's documents answers this question. The documents below are the "
    "closest found: related, not an answer."
)
PROMPT_VERSION = "ask-v1"
# The extractive answer also quotes the runner-up document when its rank score is at least this
# share of the top one's: near-twin runbooks (FilesFillingUp / SpaceFillingUp) are the ranking's
# typical confusion, and the engineer tells them apart at a glance. Chosen by cross-validation on
# the runbook dev questions (docs/ask.md).
RUNNER_UP_RATIO = 0.8


class Citation(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int  # the number the answer text refers to: [1], [2], ...
    chunk_id: int
    document_id: str
    title: str
    path: str  # the document's external id (a docs folder: the path relative to it)
    url: str | None
    section: str  # the heading of the quoted section, or "" when there is none
    quote: str


class DocumentRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    document_id: str
    chunk_id: int
    title: str
    path: str
    url: str | None
    score: float  # the rank score (fused search score plus the title bonus)


class AnswerFeatures(BaseModel):
    """What answerability was decided from, shown for transparency."""

    model_config = ConfigDict(frozen=True)

    top_cosine: float
    top_score: float
    margin: float  # top score minus the second document's
    term_coverage: float  # idf-weighted share of the question's rare terms in the top document
    title_coverage: float  # share of the top document's title words in the question


class Answer(BaseModel):
    question: str
    text: str
    abstained: bool
    citations: list[Citation] = Field(default_factory=list)
    related: list[DocumentRef] = Field(default_factory=list)  # abstention: closest documents
    retrieved: list[DocumentRef] = Field(default_factory=list)  # the ranking, best first
    features: AnswerFeatures | None = None
    confidence: float | None = None  # the model's own, when a model answered
    generator: str = "extractive"  # extractive | <provider>/<model> | none (abstained first)
    prompt_version: str = PROMPT_VERSION
    record_id: UUID | None = None  # the stored record of this ask (ask_records)


class ModelAnswer(BaseModel):
    """The schema a model answers in: chunk ids only, never titles, links or quotes."""

    model_config = ConfigDict(extra="forbid")

    answer: str = Field(min_length=1, max_length=4000)
    citations: list[int] = Field(max_length=10)
    confidence: float = Field(ge=0.0, le=1.0)


@dataclass(frozen=True)
class AnswerabilityRule:
    """Abstain when the top document covers little of the question's rare terms AND is not close
    in meaning either. Two thresholds, fitted on the runbook dev questions with cross-validation
    (docs/ask.md): either signal alone is enough to answer."""

    min_term_coverage: float = 0.40
    min_cosine: float = 0.70

    def answerable(self, features: AnswerFeatures) -> bool:
        return (
            features.term_coverage >= self.min_term_coverage
            or features.top_cosine >= self.min_cosine
        )


def runner_up_is_close(top_score: float, second_score: float, ratio: float) -> bool:
    """Whether the second document scores close enough to the first to be quoted as well."""
    return top_score > 0 and second_score >= ratio * top_score


def term_coverage(terms: Sequence[str], idfs: Sequence[float], covered: set[str]) -> float:
    """Share of the question's term weight (idf) that a document contains; 0 without terms."""
    total = sum(idfs)
    if total <= 0:
        return 0.0
    return sum(idf for term, idf in zip(terms, idfs, strict=True) if term in covered) / total


def validate_citations(output: ModelAnswer, retrieved: Sequence[int]) -> list[int]:
    """The model's citations if they are valid for this question; ``ModelOutputInvalid``
    otherwise: at least one, none repeated, each a chunk retrieved for this question."""
    if not output.answer.strip():
        raise ModelOutputInvalid("the answer is empty")
    if not output.citations:
        raise ModelOutputInvalid("the answer cites no passage")
    if len(set(output.citations)) != len(output.citations):
        raise ModelOutputInvalid("a citation is repeated")
    allowed = set(retrieved)
    unknown = [cid for cid in output.citations if cid not in allowed]
    if unknown:
        raise ModelOutputInvalid(f"cited passages that were not retrieved: {unknown}")
    return list(output.citations)
