"""``POST /api/v1/ask``: a cited answer from the caller's own tenant's documents, or the
abstention (``ask/answering.py``, docs/ask.md).

Who may: any signed-in principal of the tenant (requester, approver or admin). Asking reads only
that tenant's documents and writes nothing but usage counts, so there is no role to hold back;
``/ask`` in the browser is the same. A session needs the CSRF header, as every unsafe request.

With a model configured, each model call is counted against the principal's daily budget of model
calls (``RESOLVEFLOW_MODEL_DAILY_CALLS_PER_PRINCIPAL``, shared with triage runs) before it is
made; a spent budget answers 429. Without a model (provider ``none``) nothing is counted: the
answer is retrieval and quoting only.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from resolveflow.accounts.model_budget import BudgetedModel, ModelCallBudget
from resolveflow.ask.answering import MAX_QUESTION_CHARS, AskService, ask
from resolveflow.ask.domain.answers import Answer
from resolveflow.domain.records import Principal
from resolveflow.errors import InvalidInput
from resolveflow.web.api import ViewerDep
from resolveflow.web.security import wired

router = APIRouter(prefix="/api/v1", tags=["ask"])


class AskIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        examples=["One or more targets are unreachable in kube-system: what do I check?"],
    )


def checked_question(question: str) -> str:
    """The question if the database and the embedder can take it; one clear reason otherwise."""
    if "\x00" in question:
        raise InvalidInput("the question may not contain NUL characters (U+0000)")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("the question is not valid Unicode text") from None
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    return question


def answer_question(request: Request, principal: Principal, question: str) -> Answer:
    """Ask in the principal's tenant (the API and the page)."""
    app = wired(request)
    model = app.model()
    if model is not None:
        budget = ModelCallBudget(
            app.db,
            principal.tenant_id,
            app.settings.limits.model_calls_per_day,
            principal_id=principal.id,
        )
        model = BudgetedModel(model, budget, principal.subject)
    service = AskService(app.db, app.searcher(), model, reranker=app.reranker())
    return ask(service, principal.tenant_id, checked_question(question), principal_id=principal.id)


def passage_link(chunk_id: int) -> str:
    """The passage page, scrolled to the chunk."""
    return f"/passages/{chunk_id}#chunk-{chunk_id}"


def answer_json(answer: Answer) -> dict[str, Any]:
    """The answer as ``ask --json`` prints it, each citation and related document with the link
    to its passage page."""
    data = answer.model_dump(mode="json")
    for key in ("citations", "related", "retrieved"):
        for item in data[key]:
            item["link"] = passage_link(int(item["chunk_id"]))
    return data


@router.post(
    "/ask",
    responses={
        400: {"description": "an empty question, or text the database cannot hold"},
        422: {"description": f"not JSON, or a question longer than {MAX_QUESTION_CHARS}"},
        429: {"description": "the daily budget of model calls is spent"},
    },
)
def ask_route(request: Request, who: ViewerDep, body: AskIn) -> dict[str, Any]:
    """Answer from the tenant's own documents with numbered citations (each links to its passage
    page), or abstain: a fixed sentence and the closest documents, related but not an answer."""
    return answer_json(answer_question(request, who.principal, body.question))
