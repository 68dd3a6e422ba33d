"""Refine's steps as functions: each takes a ``RefineDocument`` and returns a new one.

A step checks its input first (``require``: this schema version, every earlier step done, this
one not yet), fills its own fields, appends itself to ``done`` and leaves the rest as it was. The
pure rules are in ``refine/domain/rules.py``; the changes step is ``refine/changes.py``;
load is ``refine/load.py``. Critical errors (no index for the tenant, an unreadable
ticket, a configured clone missing) raise; local ones become ``warnings``. See docs/refine.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from uuid import UUID

from resolveflow.accounts.limits import LimitExceeded
from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.llm.errors import ModelError, ModelOutputInvalid
from resolveflow.llm.protocol import ChatModel, Purpose
from resolveflow.llm.structured import structured_call
from resolveflow.refine.changes import SIMILAR_DEPTH, page_from_hit, task_from_hit
from resolveflow.refine.domain.document import (
    SCHEMA_VERSION,
    STEP_ORDER,
    Facts,
    Judgement,
    RefineDocument,
    RefineStep,
    StepWarning,
    Summary,
)
from resolveflow.refine.store import runbooks as store
from resolveflow.retrieval.records import Hit
from resolveflow.retrieval.search import MAX_K, Searcher
from resolveflow.store import documents as documents_store
from resolveflow.store.database import Database

if TYPE_CHECKING:
    from resolveflow.adapters.git.history import RepositoryHistory
    from resolveflow.refine.domain.rules import RefinePolicy

logger = logging.getLogger(__name__)

RELATED_K = SIMILAR_DEPTH  # the changes step votes with the fixed tasks among these
JUDGED = 10  # relevance judges (and the Markdown shows) the most similar ones only
PAGES_KEPT = JUDGED  # the related pages kept (and judged): only the relevant ones are shown
MAX_MODEL_ATTEMPTS = 2  # invalid model output is asked for this many times in all


def require(doc: RefineDocument, step: RefineStep) -> None:
    """``InvalidInput`` unless ``doc`` is ready for ``step``: the schema version this code
    writes, every earlier step done, and ``step`` itself not yet."""
    if doc.schema_version != SCHEMA_VERSION:
        raise InvalidInput(
            f"schema_version is {doc.schema_version!r}; this version reads {SCHEMA_VERSION!r}"
        )
    if step in doc.done:
        raise InvalidInput(f"the document has already been through step {step.value}")
    earlier = STEP_ORDER[: STEP_ORDER.index(step)]
    missing = [s.value for s in earlier if s not in doc.done]
    if missing:
        raise InvalidInput(f"step {step.value} needs step(s) {', '.join(missing)} first "
                           "(they are missing from done)")  # fmt: skip


def _warn(doc: RefineDocument, step: RefineStep, message: str) -> None:
    doc.warnings.append(StepWarning(step=step, message=message))


def query_text(doc: RefineDocument) -> str:
    return f"{doc.ticket.title}\n\n{doc.ticket.body}".strip()


def ticket_key(doc: RefineDocument) -> tuple[str, str] | None:
    """(source, external id) of the ticket in the index, when it is a GitHub issue: a ticket
    that is itself indexed must not be its own similar task."""
    ticket = doc.ticket
    if ticket.source == "github" and ticket.repository and ticket.number is not None:
        return f"github:{ticket.repository.lower()}", str(ticket.number)
    return None


def related(
    doc: RefineDocument,
    searcher: Searcher,
    tenant_id: UUID,
    k: int = RELATED_K,
    policy: RefinePolicy | None = None,
    history: RepositoryHistory | None = None,
) -> RefineDocument:
    """Similar past tasks and related pages from the tenant's index (the hybrid search), as of
    the ticket's creation when it is known. A hit is a task by its kind (an issue, a pull
    request) or its source (``policy.task_sources``); every other hit is a page. When pages take
    some of the ``k`` places, the search goes once more, deeper, so that ``k`` tasks still
    vote. When the index holds no task for the ticket and its repository's clone is given
    (``history``), the clone's commits before the ticket are the past tasks
    (``refine/history_tasks.py``). Neither an index nor a clone is a critical error."""
    from resolveflow.refine.domain.rules import RefinePolicy

    require(doc, RefineStep.RELATED)
    with searcher.db.tenant(tenant_id) as conn:
        state = documents_store.index_state(conn, tenant_id)
    indexed = state is not None and state.chunk_count > 0
    if not indexed and history is None:
        raise ConfigError("the tenant has no search index and the ticket's repository no clone: "
                          "index its issues and runbooks (resolveflow index github OWNER/REPO, "
                          "resolveflow index docs DIR), or give the repository a clone "
                          "(refine.clone in the policy file) and name it with --repo")  # fmt: skip
    rules = policy or RefinePolicy()
    hits = _search(doc, searcher, tenant_id, k) if indexed else []
    tasks = [h for h in hits if rules.is_task(h.kind, h.source)]
    if len(tasks) < k and len(hits) == k and k < MAX_K:
        hits = _search(doc, searcher, tenant_id, MAX_K)
        tasks = [h for h in hits if rules.is_task(h.kind, h.source)]
    pages = [h for h in hits if not rules.is_task(h.kind, h.source)]
    out = doc.model_copy(deep=True)
    out.related = [task_from_hit(hit) for hit in tasks[:k]]
    out.pages = [page_from_hit(hit) for hit in pages[:PAGES_KEPT]]
    if not out.related and history is not None:
        from resolveflow.refine.history_tasks import history_tasks

        fusion = searcher.params.fusion
        out.related = history_tasks(out, history, searcher.embedder, fusion, k)
    if not out.related:
        where = "in the index" if history is None else "in the index or the git history"
        _warn(out, RefineStep.RELATED, f"no similar past task was found {where}")
    out.done.append(RefineStep.RELATED)
    return out


def _search(doc: RefineDocument, searcher: Searcher, tenant_id: UUID, k: int) -> list[Hit]:
    return searcher.search(
        tenant_id, query_text(doc), k=k, as_of=doc.ticket.created_at, exclude=ticket_key(doc)
    )


def relevance(doc: RefineDocument, model: ChatModel | None) -> RefineDocument:
    """Each related task judged high / medium / low with a one-line reason: by the rules without
    a model; with one, its judgements of retrieved ids only, checked by code, asked again within a
    budget and then judged by the rules. Related pages are judged by the rules, whose levels the
    page floor was measured on (docs/refine.md, "Related pages")."""
    from resolveflow.refine.domain import rules

    require(doc, RefineStep.RELEVANCE)
    out = doc.model_copy(deep=True)
    shown = out.related[:JUDGED]
    judged = _model_judgements(out, model) if model is not None and shown else None
    if judged is None:
        judged = [rules.judge(out.ticket, task) for task in shown]
    out.judgements = judged
    out.page_judgements = [rules.judge(out.ticket, page) for page in out.pages[:JUDGED]]
    out.done.append(RefineStep.RELEVANCE)
    return out


def _model_judgements(doc: RefineDocument, model: ChatModel) -> list[Judgement] | None:
    from resolveflow.refine.domain import rules

    shown = doc.related[:JUDGED]
    messages = rules.judgement_prompt(doc.ticket, shown)
    try:
        return structured_call(
            model,
            messages,
            rules.ModelJudgements,
            lambda output: rules.validate_judgements(output, shown),
            purpose=Purpose.RELEVANCE,
            attempts=MAX_MODEL_ATTEMPTS,
        ).value
    except ModelOutputInvalid as exc:
        logger.info("model judgements invalid", extra={"reason": exc.message})
        _warn(doc, RefineStep.RELEVANCE,
              f"the model's judgements were invalid {MAX_MODEL_ATTEMPTS} times; judged by rules")  # fmt: skip
    except (ModelError, LimitExceeded) as exc:
        _warn(doc, RefineStep.RELEVANCE, f"the model is unavailable ({exc}); judged by rules")
    return None


def summarize(
    doc: RefineDocument, policy: RefinePolicy, model: ChatModel | None = None
) -> RefineDocument:
    """The rewritten task, the facts and the scopes: the deterministic summary; with a model, its
    summary once code has checked it (asked again within the budget, then the rules')."""
    from resolveflow.refine.domain import rules

    require(doc, RefineStep.SUMMARIZE)
    out = doc.model_copy(deep=True)
    by_rules = rules.summarize(out, policy)
    by_model = _model_summary(out, policy, by_rules.facts, model) if model is not None else None
    # The Markdown names only the scopes the repository configures, whoever wrote the summary.
    chosen = by_model or by_rules
    out.summary = chosen.model_copy(update={"configured_scopes": by_rules.configured_scopes})
    out.done.append(RefineStep.SUMMARIZE)
    return out


def _model_summary(
    doc: RefineDocument, policy: RefinePolicy, facts: Facts, model: ChatModel
) -> Summary | None:
    from resolveflow.refine.domain import rules
    from resolveflow.refine.domain import summary_model as by_model

    paths = by_model.candidate_paths(doc, facts, policy.file_rules().allows)
    front, back = rules.scopes(paths, policy.scopes)
    shown = [by_model.Candidate(p, p in front, p in back) for p in paths]
    messages = by_model.summary_prompt(doc.ticket, facts, shown)
    generator = f"{model.provider}/{model.model}"
    try:
        return structured_call(
            model,
            messages,
            by_model.ModelSummary,
            lambda answer: by_model.validate_summary(answer, doc.ticket, facts, paths, generator),
            purpose=Purpose.SUMMARY,
            attempts=MAX_MODEL_ATTEMPTS,
        ).value
    except ModelOutputInvalid as exc:
        logger.info("model summary invalid", extra={"reason": exc.message})
        times = "twice" if MAX_MODEL_ATTEMPTS == 2 else f"{MAX_MODEL_ATTEMPTS} times"
        why = f"the model's summary was invalid {times}; summarized by rules"
    except (ModelError, LimitExceeded) as exc:
        why = f"the model is unavailable ({exc}); summarized by rules"
    _warn(doc, RefineStep.SUMMARIZE, why)
    return None


def runbook(doc: RefineDocument, db: Database, tenant_id: UUID) -> RefineDocument:
    """The trusted runbook a high-relevance task's label or a declared trigger points at, from
    the tenant's indexed runbooks; nothing in the ticket's text can name one."""
    from resolveflow.refine.domain import rules

    require(doc, RefineStep.RUNBOOK)
    with db.tenant(tenant_id) as conn:
        rows = store.runbooks(conn, tenant_id)
    found = [rules.RunbookInfo(tag=r.runbook_tag, title=r.title, path=r.external_id,
                               url=r.url, text=r.body or "",
                               triggers=tuple(r.runbook_triggers)) for r in rows]  # fmt: skip
    out = doc.model_copy(deep=True)
    out.runbook = rules.choose_runbook(out, found)
    out.done.append(RefineStep.RUNBOOK)
    return out


def output(doc: RefineDocument) -> RefineDocument:
    """The one Markdown enrichment of everything above."""
    from resolveflow.refine.domain import rules

    require(doc, RefineStep.OUTPUT)
    out = doc.model_copy(deep=True)
    out.done.append(RefineStep.OUTPUT)
    out.markdown = rules.render_markdown(out)
    return out
