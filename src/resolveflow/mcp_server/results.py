"""What the tools return: typed results, published to the agent as each tool's output schema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchHit(_Result):
    title: str
    url: str | None
    source: str
    kind: str
    external_id: str
    section: str
    snippet: str
    relevance: float = Field(description="Calibrated, in [0, 1].")
    chunk_id: int


class SearchResult(_Result):
    hits: list[SearchHit]


class ProposalResult(_Result):
    """A proposal waiting for a person: approve it in the inbox by this digest (no tool can)."""

    proposal_id: str
    kind: str
    summary: str
    digest: str = Field(description="SHA-256 of the exact action a person approves.")
    inbox_link: str = Field(description="Where a person reviews and decides it.")
    state: str = Field(default="waiting for approval")


class EmailReplyResult(_Result):
    """A drafted reply: proposed when every check passed, else its findings (no proposal)."""

    draft_id: str
    version: int
    findings: list[str]
    proposal: ProposalResult | None


class RunEvidence(_Result):
    """A triage run as its page shows it: evidence, classification, proposal, timeline."""

    run_id: str
    status: str
    view: dict[str, Any]


class RefinePacket(_Result):
    """A refined ticket: the Markdown a person would read, and the whole document."""

    markdown: str
    document: dict[str, Any]
