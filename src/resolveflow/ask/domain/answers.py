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
from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from resolveflow.llm.errors import ModelOutputInvalid

ABSTENTION_TEXT = (
    "No source in this tenant's documents answers this question. The documents below are the "
    "closest found: related, not an answer."
)
TENTATIVE_TEXT = (
    "No page in this tenant's documents answers this for sure. These may help: each is listed "
    "with what it has in common with the question."
)
PROMPT_VERSION = "ask-v1"
# The extractive answer also quotes the runner-up document when its rank score is at least this
# share of the top one's: near-twin runbooks (FilesFillingUp / SpaceFillingUp) are the ranking's
# typical confusion, and the engineer tells them apart at a glance. Chosen by cross-validation on
# the runbook dev questions (docs/ask.md).
RUNNER_UP_RATIO = 0.8


class AnswerOutcome(StrEnum):
    """The three things Ask can say."""

    ANSWERED = "answered"  # quotes and cites the page(s) that answer it
    TENTATIVE = "tentative"  # no page answers it for sure; the candidates, and why each
    ABSTAINED = "abstained"  # nothing in the documents relates to it


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
    why: str = ""  # what it has in common with the question (tentative answers list it)


class AnswerFeatures(BaseModel):
    """What answerability was decided from, shown for transparency."""

    model_config = ConfigDict(frozen=True)

    top_cosine: float
    top_score: float
    margin: float  # top score minus the second document's
    # idf-weighted share of the question's words in the top document; a word the index has
    # never seen counts with the highest weight, so an off-topic question covers little
    term_coverage: float
    title_coverage: float  # share of the top document's title words in the question
    name_match: float = 0.0  # weight of the best name of the question the top page is about
    # the top cosine placed between the tenant's own calibration points: 0 at what unrelated
    # questions reach in this index, 1 at what its pages' own titles reach (ask/calibration.py)
    relation: float = 0.0
    unseen_share: float = 0.0  # share of the question's words the index has never seen
    # how many of the names the question mentions (written or called in its code) the index
    # holds: a question about things the knowledge base names is never "nothing relates"
    known_names: int = 0
    # distinct words of what was searched: the coverage a page can reach falls with it
    question_words: int = 0
    # Of the quoted passage that holds most of the question (ask/choice.py): the share of the
    # question's words it holds (idf-weighted), the weight of the question's name its heading
    # gives, and its own cosine placed on the calibration as ``relation`` is.
    passage_coverage: float = 0.0
    passage_name: float = 0.0
    passage_relation: float = 0.0


class Answer(BaseModel):
    question: str
    text: str
    abstained: bool  # the fixed abstention: nothing relates
    outcome: AnswerOutcome = AnswerOutcome.ANSWERED
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
    """The outcome from signals that read the same in any index (docs/ask.md, "Three outcomes"):

    - ``relation`` places the top page's cosine between what off-topic questions reach in this
      tenant's index (0) and what its own pages' titles reach (1), so "close in meaning" is
      measured against the tenant's corpus, not against a constant fitted to one;
    - ``term_coverage`` counts every word of the question, those the index has never seen with
      the highest weight;
    - the question names what the top page is about: a name the asker writes (``name_match``)
      or every word of the page's title (``title_coverage``).

    Nothing relates (the fixed abstention) when the top page is not closer than off-topic
    questions get, or when it is barely closer, the question names nothing the index knows
    (``known_names``), and either the index has never seen most of the question's words or the
    page shares little of them ("little" scaled down past ``coverage_words`` words, since any
    page holds a smaller share of a long question's words); never when the question names what
    the page is about, nor when the page holds most of the question's words, all of them words
    the index knows (``related_coverage``): the words relate even where meaning reads nothing.
    An answer when the page shares most of the question's words and is somewhat closer than
    off-topic questions get (``coverage_relation``: shared words alone are not an answer), or
    names what the question names and is close, or is as close as a page's own title. Between
    the two: tentative."""

    # Chosen on both dev corpora at once, by the worst case (docs/ask.md, "Three outcomes").
    min_relation: float = 0.05
    weak_relation: float = 0.45
    min_weak_coverage: float = 0.22
    max_unseen: float = 0.3  # most of the question's words are not in the index at all
    # Past this many distinct words the weak-coverage floor falls as 1/n (docs/ask.md: at 30 the
    # runbooks keep every abstention and R's long questions lose five wrong ones).
    coverage_words: int = 30
    answer_coverage: float = 0.4
    # Tried as a new user would on the Rust books (docs/ask.md, "Shared words and meaning"):
    # "How do I publish an npm package?" shared every word with Cargo's workspaces page (0.075
    # above off-topic) and was answered from it; "What does the question mark operator do?"
    # shared every word with its top pages and was told nothing relates. Neither changes a dev
    # figure but two answers on R's pages (one right, one wrong) at these values.
    coverage_relation: float = 0.2
    related_coverage: float = 0.6
    answer_relation: float = 0.9
    named_relation: float = 0.45
    # A quoted passage holds the question (``holds``) when it shares some of the question's
    # words and is somewhat closer in meaning than off-topic questions get, both at once (as
    # ``coverage_relation`` for a page): words alone held for passages that answer nothing. Chosen
    # on the four dev corpora at once, in the middle of the range where each keeps its figures
    # (docs/ask.md, "Passages").
    passage_coverage: float = 0.3
    passage_coverage_relation: float = 0.3
    passage_relation: float = 0.9

    def outcome(self, features: AnswerFeatures) -> AnswerOutcome:
        # The question names what the page is about, in its own words or by the page's title.
        named = features.name_match >= 1.0 or features.title_coverage >= 1.0
        # A long question shares few of its words with any page and sits close to nothing in
        # meaning; when it names functions or settings the index holds, the index relates to it.
        weak = (
            features.relation < self.weak_relation
            and features.known_names == 0
            and (
                features.unseen_share >= self.max_unseen
                or features.term_coverage < self.weak_coverage(features.question_words)
            )
        )
        words_relate = (
            features.term_coverage >= self.related_coverage
            and features.unseen_share < self.max_unseen
        )
        if not named and not words_relate and (features.relation < self.min_relation or weak):
            return AnswerOutcome.ABSTAINED
        if (
            (
                features.term_coverage >= self.answer_coverage
                and features.relation >= self.coverage_relation
            )
            or features.relation >= self.answer_relation
            or (named and features.relation >= self.named_relation)
        ):
            return AnswerOutcome.ANSWERED
        return AnswerOutcome.TENTATIVE

    def holds(self, features: AnswerFeatures) -> bool:
        """Whether a quoted passage holds what the question asks: a name the question gives is
        the passage's heading or its page's, or it holds some of the question's words and is
        somewhat closer in meaning than off-topic questions get, or on its own it is as close in
        meaning as a page is to its own title. A page found by its many words whose best passage
        holds none of this is listed as "may help", not quoted as the answer."""
        # A question that names the page (its title, or a name it is about) names every
        # passage's heading path, which starts with the page's title.
        named = features.name_match >= 1.0 or features.title_coverage >= 1.0
        return (
            named
            or features.passage_name >= 1.0
            or (
                features.passage_coverage >= self.passage_coverage
                and features.passage_relation >= self.passage_coverage_relation
            )
            or features.passage_relation >= self.passage_relation
        )

    def weak_coverage(self, question_words: int) -> float:
        """The coverage below which a barely related page shares "little" of a question of
        ``question_words`` distinct words (0: not known, the full floor)."""
        if question_words <= self.coverage_words:
            return self.min_weak_coverage
        return self.min_weak_coverage * self.coverage_words / question_words


def runner_up_is_close(top_score: float, second_score: float, ratio: float) -> bool:
    """Whether the second document scores close enough to the first to be quoted as well."""
    return top_score > 0 and second_score >= ratio * top_score


def term_coverage(idfs: dict[str, float], covered: set[str]) -> float:
    """Share of the question's term weight (idf, unseen terms included) that a document
    contains; 0 without terms."""
    total = sum(idfs.values())
    if total <= 0:
        return 0.0
    return sum(idf for term, idf in idfs.items() if term in covered) / total


def relation(cosine: float, unrelated: float, related: float) -> float:
    """``cosine`` placed between the calibration points, 0 at ``unrelated`` and 1 at
    ``related`` (not clipped above 1); 0 when the points are not apart."""
    if related - unrelated <= 1e-6:
        return 0.0
    return max(0.0, (cosine - unrelated) / (related - unrelated))


def pooled_relation(
    features: AnswerFeatures, cosines: Sequence[float], pair: tuple[float, float]
) -> AnswerFeatures:
    """``features`` with the relation of the closest in meaning of the pages the passage is
    chosen from (their best chunks' ``cosines``), as the calibration reads the closest chunk of
    the index: the ranking weighs the words enough to put first a page farther in meaning than
    the second, and an answer quoted from the second is no less related for it. Read once
    something relates (whether nothing does stays the top page's to say), and not when the
    question names the top page: it is about that page, whose own closeness decides."""
    if features.name_match >= 1.0 or features.title_coverage >= 1.0 or not cosines:
        return features
    closest = relation(max(cosines), *pair)
    return features.model_copy(update={"relation": round(max(features.relation, closest), 4)})


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
