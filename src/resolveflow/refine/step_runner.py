"""Running one refine step by name, with what it needs, and each step's documented schema.

The CLI's ``refine step NAME`` and the graph (refine/graph.py) both run steps through
``run_step``. What a step needs is given as functions, called only by the steps that need them, so
``refine step output`` opens no database and ``refine step summarize`` loads no search stack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from resolveflow.errors import ConfigError, InvalidInput
from resolveflow.llm.protocol import ChatModel
from resolveflow.refine import steps as refine
from resolveflow.refine.domain.document import (
    SCHEMA_VERSION,
    STEP_ORDER,
    RefineDocument,
    RefineStep,
)
from resolveflow.refine.load import TicketReaders, load_ticket
from resolveflow.store.database import Database

if TYPE_CHECKING:
    from resolveflow.adapters.git.history import RepositoryHistory
    from resolveflow.refine.changes import ChangesDeps
    from resolveflow.refine.domain.rules import RefinePolicy
    from resolveflow.retrieval.search import Searcher

# The fields of the document each step fills (docs/refine.md, "Steps and schemas").
STEP_FILLS: dict[RefineStep, tuple[str, ...]] = {
    RefineStep.LOAD: ("ticket",),
    RefineStep.RELATED: ("related", "pages"),
    RefineStep.RELEVANCE: ("judgements", "page_judgements"),
    RefineStep.SUMMARIZE: ("summary",),
    RefineStep.RUNBOOK: ("runbook",),
    RefineStep.CHANGES: ("changes", "suggested_files"),
    RefineStep.OUTPUT: ("markdown",),
}


def _missing(what: str) -> Any:
    raise ConfigError(f"refine: {what} is not available here")


@dataclass
class StepDeps:
    """What the steps may need; each is asked for only by a step that uses it."""

    readers: TicketReaders = field(default_factory=TicketReaders)
    tenant_id: Callable[[], UUID] = lambda: _missing("a tenant")
    db: Callable[[], Database] = lambda: _missing("the database")
    searcher: Callable[[], Searcher] = lambda: _missing("the search index")
    model: Callable[[], ChatModel | None] = lambda: None
    policy: Callable[[RefineDocument], RefinePolicy] | None = None  # the ticket repository's
    changes: Callable[[RefineDocument], ChangesDeps] = lambda doc: _missing("git history")
    # the ticket repository's clone, when one is configured: its commits are the past tasks
    # when the index holds none
    history: Callable[[RefineDocument], RepositoryHistory | None] = lambda doc: None


def step_named(name: str) -> RefineStep:
    try:
        return RefineStep(name)
    except ValueError:
        names = ", ".join(s.value for s in STEP_ORDER)
        raise InvalidInput(f"no refine step {name!r}: the steps are {names}") from None


def run_step(step: RefineStep, doc: RefineDocument, deps: StepDeps) -> RefineDocument:
    """``doc`` after ``step`` (``InvalidInput`` when ``doc`` is not ready for it)."""
    refine.require(doc, step)
    if step is RefineStep.LOAD:
        return load_ticket(doc, deps.readers)
    if step is RefineStep.RELATED:
        return refine.related(doc, deps.searcher(), deps.tenant_id(), policy=_policy(deps, doc),
                              history=deps.history(doc))  # fmt: skip
    if step is RefineStep.RELEVANCE:
        return refine.relevance(doc, deps.model())
    if step is RefineStep.SUMMARIZE:
        return refine.summarize(doc, _policy(deps, doc), deps.model())
    if step is RefineStep.RUNBOOK:
        return refine.runbook(doc, deps.db(), deps.tenant_id())
    if step is RefineStep.CHANGES:
        from resolveflow.refine.changes import changes_step  # git loads only here

        return changes_step(doc, deps.changes(doc))
    return refine.output(doc)


def _policy(deps: StepDeps, doc: RefineDocument) -> RefinePolicy:
    if deps.policy is not None:
        return deps.policy(doc)
    from resolveflow.refine.domain.rules import RefinePolicy

    return RefinePolicy()


def parse_document(text: str) -> RefineDocument:
    """One ``RefineDocument`` from JSON text, or ``InvalidInput`` in one line."""
    from pydantic import ValidationError

    try:
        return RefineDocument.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        count = exc.error_count()
        more = f" (and {count - 1} more)" if count > 1 else ""
        raise InvalidInput(f"not a refine document: {where}: {first['msg']}{more}") from None


def step_schema(step: RefineStep | None) -> dict[str, Any]:
    """The JSON Schema of the document, with what ``step`` requires and fills when given."""
    schema: dict[str, Any] = RefineDocument.model_json_schema()
    schema["$id"] = SCHEMA_VERSION if step is None else f"{SCHEMA_VERSION}#{step.value}"
    schema["x-schema-version"] = SCHEMA_VERSION
    if step is None:
        schema["x-steps"] = [s.value for s in STEP_ORDER]
        return schema
    earlier = STEP_ORDER[: STEP_ORDER.index(step)]
    schema["x-step"] = step.value
    schema["x-requires-done"] = [s.value for s in earlier]
    schema["x-requires"] = sorted({f for s in earlier for f in STEP_FILLS[s]})
    schema["x-fills"] = list(STEP_FILLS[step])
    return schema
