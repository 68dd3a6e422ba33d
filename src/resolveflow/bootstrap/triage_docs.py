"""Ask as triage's ``DocsAnswerer``: the two products stay apart (neither imports the other), and
this is where one is handed to the other.

Triage asks the tenant's documentation (``doc`` and ``runbook`` documents, not the earlier
issues its related part shows) through ``ask.answering.answer_only``: Ask's ranking, calibration
and answerability rule, and no ask recorded. No model is called: the answer is Ask's extractive
one, quoting the pages themselves, so a comment never carries model prose about the docs.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from resolveflow.ask.answering import MAX_QUESTION_CHARS, AskService, answer_only
from resolveflow.ask.domain.answers import Answer, AnswerOutcome
from resolveflow.retrieval.fusion import DOCUMENT_KINDS
from resolveflow.retrieval.search import Searcher
from resolveflow.store.database import Database
from resolveflow.triage.domain.docs import DocsAnswer, DocsPassage


@dataclass(frozen=True)
class AskDocs:
    """``(tenant, question) -> DocsAnswer | None`` over Ask (``triage.parts.DocsAnswerer``)."""

    service: AskService

    def __call__(self, tenant_id: UUID, question: str) -> DocsAnswer | None:
        question = question.strip()[:MAX_QUESTION_CHARS]
        if not question:
            return None
        return docs_answer(answer_only(self.service, tenant_id, question), self.floor)

    @property
    def floor(self) -> float:
        """The least closeness (``relation``) at which Ask's rule answers at all."""
        rule = self.service.rule
        return min(rule.coverage_relation, rule.named_relation, rule.answer_relation)


def ask_docs(db: Database, searcher: Searcher) -> AskDocs:
    return AskDocs(AskService(db, searcher, model=None, kinds=DOCUMENT_KINDS))


def docs_answer(answer: Answer, floor: float) -> DocsAnswer | None:
    """Ask's answer as triage reads it: its cited passages only when it answered."""
    if answer.features is None:  # nothing in the documents was retrieved
        return None
    scores = {ref.document_id: ref.score for ref in answer.retrieved}
    answered = answer.outcome is AnswerOutcome.ANSWERED and not answer.abstained
    passages = tuple(
        DocsPassage(c.title, c.path, c.url, c.section, c.quote, scores.get(c.document_id))
        for c in (answer.citations if answered else [])
    )
    return DocsAnswer(answer.features.relation, floor, passages)
