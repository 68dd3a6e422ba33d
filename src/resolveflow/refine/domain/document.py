"""Refine: a raw ticket turned into verified context, step by step. The types only; pure.

Every step reads and writes one ``RefineDocument``: the ticket plus what the steps so far have
added. A step requires the fields of the steps before it and fills its own, so each step can be
run alone on a JSON document (``resolveflow refine step NAME < in.json``) and the whole graph is
those steps in order. ``SCHEMA_VERSION`` changes whenever a field changes meaning or is removed;
adding an optional field keeps it. All ticket text is untrusted data: no step follows an
instruction found in it, and nothing in it chooses a runbook, a file or an action.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "resolveflow.refine/1"
MAX_TICKET_CHARS = 60_000  # a ticket longer than this is cut (the cut is said in a warning)


class RefineStep(StrEnum):
    LOAD = "load"
    RELATED = "related"
    RELEVANCE = "relevance"
    SUMMARIZE = "summarize"
    RUNBOOK = "runbook"
    CHANGES = "changes"
    OUTPUT = "output"


# Changes before summarize: the scopes come from where the related tasks' fixes landed.
STEP_ORDER: tuple[RefineStep, ...] = (
    RefineStep.LOAD,
    RefineStep.RELATED,
    RefineStep.RELEVANCE,
    RefineStep.CHANGES,
    RefineStep.SUMMARIZE,
    RefineStep.RUNBOOK,
    RefineStep.OUTPUT,
)


class TicketSource(StrEnum):
    GITHUB = "github"
    GITLAB = "gitlab"
    FILE = "file"
    TEXT = "text"


class Relevance(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    def at_least(self, floor: Relevance) -> bool:
        order = (Relevance.LOW, Relevance.MEDIUM, Relevance.HIGH)
        return order.index(self) >= order.index(floor)


class TaskKind(StrEnum):
    """The kinds of indexed document that are tasks (the index's kinds: ``retrieval/records.py``
    ``KINDS``): issues (a forge's, or a ticket of a JSONL corpus, whose kind defaults to issue)
    and pull requests. Every other kind (doc, runbook) is a page; a source the policy names in
    ``task_sources`` makes its documents tasks whatever their kind."""

    ISSUE = "issue"
    PULL = "pull"


# The past tasks read from a repository's git history (refine/history_tasks.py), never indexed:
# their source is "git:" and the repository's name, a commit's kind is COMMIT_KIND (a pull
# request recovered from a squash subject is a TaskKind.PULL).
GIT_SOURCE_PREFIX = "git:"
COMMIT_KIND = "commit"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Ticket(_Model):
    source: TicketSource
    ref: str | None = None  # "owner/repo#12", "group/project#3", a file name; None for text
    repository: str | None = None  # the forge repository the ticket belongs to, if known
    number: int | None = None
    title: str
    body: str = ""
    created_at: datetime | None = None
    labels: list[str] = Field(default_factory=list)
    url: str | None = None


class RelatedHit(_Model):
    """A search hit of the tenant's index, as the related step keeps it."""

    source: str
    external_id: str
    kind: str
    title: str
    url: str | None = None
    score: float  # the fused search score
    cosine: float
    labels: list[str] = Field(default_factory=list)
    runbook_tag: str | None = None
    created_at: datetime | None = None
    excerpt: str = ""


class RelatedTask(RelatedHit):
    """A similar past task: an issue, a pull request, or a document of a source the policy
    marks as tasks (``task_sources``)."""


class RelatedPage(RelatedHit):
    """A page of the index that is not a task (a doc, a runbook): listed in its own section,
    and only when judged relevant enough (``PAGE_FLOOR``)."""


# A page is listed when the rules judge it at least this relevant (the same rules and levels as a
# task's). Measured on the runbook and R-help dev questions and on hf-datasets issues against the
# project's own docs (docs/refine.md, "Related pages"): below high, pages are mostly noise.
PAGE_FLOOR = Relevance.HIGH


class Judgement(_Model):
    external_id: str  # of a RelatedTask in this document
    relevance: Relevance
    reason: str  # one line


class Facts(_Model):
    versions: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    stack_frames: list[str] = Field(default_factory=list)  # "path:line in function"
    file_paths: list[str] = Field(default_factory=list)


class ScopeName(StrEnum):
    FRONTEND = "frontend"
    BACKEND = "backend"


class Summary(_Model):
    task: str  # the rewritten technical task
    split_required: bool = False
    frontend_scope: list[str] = Field(default_factory=list)  # files or path patterns
    backend_scope: list[str] = Field(default_factory=list)
    # The scopes the repository has globs for: the Markdown says nothing of the others (a
    # document written before this field was added had both)
    configured_scopes: list[ScopeName] = Field(
        default_factory=lambda: [ScopeName.FRONTEND, ScopeName.BACKEND]
    )
    facts: Facts = Field(default_factory=Facts)
    generator: str = "extractive"  # "extractive" or "provider/model"


class RunbookAttachment(_Model):
    tag: str
    title: str
    path: str  # the runbook document's external id
    url: str | None = None
    why: str  # which related task's label or which trigger chose it
    checklist: str  # the runbook's text as stored (trusted)


class ChangedFile(_Model):
    path: str
    added: int | None = None  # None: binary
    removed: int | None = None


class FixCommit(_Model):
    task: str  # external id of the related task it fixed
    repository: str  # the configured repository name
    sha: str
    committed_at: datetime
    subject: str
    how: str  # "fix link", "squash (#PR)", "fixes #N"
    files: list[ChangedFile] = Field(default_factory=list)
    excerpt: str = ""  # a bounded diff excerpt of the most changed file
    excerpt_truncated: bool = False


class SuggestedFile(_Model):
    path: str
    repository: str
    score: float
    commits: list[str] = Field(default_factory=list)  # shas of the fix commits behind it
    reasons: list[str] = Field(
        default_factory=list
    )  # "named in the ticket", "traceback frame", ...


class StepWarning(_Model):
    step: RefineStep
    message: str  # one line


class RefineDocument(_Model):
    """What flows between the steps; ``done`` lists the steps that have run, in order."""

    schema_version: str = SCHEMA_VERSION
    ticket: Ticket
    done: list[RefineStep] = Field(default_factory=list)
    related: list[RelatedTask] = Field(default_factory=list)
    pages: list[RelatedPage] = Field(default_factory=list)  # the related step's other hits
    judgements: list[Judgement] = Field(default_factory=list)  # of ``related``
    page_judgements: list[Judgement] = Field(default_factory=list)  # of ``pages``
    summary: Summary | None = None
    runbook: RunbookAttachment | None = None
    changes: list[FixCommit] = Field(default_factory=list)
    suggested_files: list[SuggestedFile] = Field(default_factory=list)
    warnings: list[StepWarning] = Field(default_factory=list)
    markdown: str | None = None

    def judgement(self, external_id: str) -> Judgement | None:
        """A related task's judgement."""
        return next((j for j in self.judgements if j.external_id == external_id), None)

    def judged_high(self, external_id: str) -> bool:
        """A related task judged high: only its fixes show their files and diff."""
        judged = self.judgement(external_id)
        return judged is not None and judged.relevance is Relevance.HIGH

    def page_judgement(self, external_id: str) -> Judgement | None:
        return next((j for j in self.page_judgements if j.external_id == external_id), None)

    def relevant_pages(self) -> list[tuple[RelatedPage, Judgement]]:
        """The pages judged at least ``PAGE_FLOOR``, in search order."""
        judged = [(page, self.page_judgement(page.external_id)) for page in self.pages]
        return [(p, j) for p, j in judged if j is not None and j.relevance.at_least(PAGE_FLOOR)]
