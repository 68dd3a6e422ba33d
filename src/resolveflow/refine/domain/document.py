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


class RelatedTask(_Model):
    """A similar past task from the tenant's index (an issue, a pull request, a document)."""

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


class Judgement(_Model):
    external_id: str  # of a RelatedTask in this document
    relevance: Relevance
    reason: str  # one line


class Facts(_Model):
    versions: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    stack_frames: list[str] = Field(default_factory=list)  # "path:line in function"
    file_paths: list[str] = Field(default_factory=list)


class Summary(_Model):
    task: str  # the rewritten technical task
    split_required: bool = False
    frontend_scope: list[str] = Field(default_factory=list)  # files or path patterns
    backend_scope: list[str] = Field(default_factory=list)
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
    judgements: list[Judgement] = Field(default_factory=list)
    summary: Summary | None = None
    runbook: RunbookAttachment | None = None
    changes: list[FixCommit] = Field(default_factory=list)
    suggested_files: list[SuggestedFile] = Field(default_factory=list)
    warnings: list[StepWarning] = Field(default_factory=list)
    markdown: str | None = None

    def judgement(self, external_id: str) -> Judgement | None:
        return next((j for j in self.judgements if j.external_id == external_id), None)
