"""What each tool does, as the acting principal, through the services the CLI and the web API
call (no MCP here: ``server.py`` publishes these). Every write is a proposal made by the gate's
proposal creation, which enforces the tenant, the roles, the repository allowlist, the tenant's
project aliases and the mailbox grants; none approves or executes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from resolveflow.ask.answering import MAX_QUESTION_CHARS, AskService, ask
from resolveflow.ask.domain.answers import Answer
from resolveflow.ask.issues_prepare import IssueTargets, prepare_issue
from resolveflow.bootstrap.app import App
from resolveflow.domain.records import Principal
from resolveflow.domain.user_text import check_text, check_texts
from resolveflow.errors import InvalidInput, PolicyViolation
from resolveflow.gate import proposals as proposal_service
from resolveflow.mcp_server.results import (
    EmailReplyResult,
    ProposalResult,
    RefinePacket,
    RunEvidence,
    SearchHit,
    SearchResult,
)
from resolveflow.store import tenants as tenant_store

DEFAULT_BASE_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class AgentTools:
    """The tools' work for one process (stdio) or one web app (HTTP); the principal is passed
    to each call, authenticated by the caller from the token it was given."""

    app: App

    def base_url(self) -> str:
        """Where the inbox is: RESOLVEFLOW_WEB_PUBLIC_URL, else where ``serve`` listens."""
        web = self.app.settings.web
        if web.public_url:
            return web.public_url.rstrip("/")
        if web.host and web.port:
            return f"http://{web.host}:{web.port}"
        return DEFAULT_BASE_URL

    def proposal(self, principal: Principal, proposal_id: UUID) -> ProposalResult:
        view = proposal_service.describe(self.app.db, principal, proposal_id)
        return ProposalResult(
            proposal_id=view["id"],
            kind=view["kind"],
            summary=view["summary"],
            digest=view["digest"],
            inbox_link=f"{self.base_url()}/proposals/{view['id']}",
        )

    # ---- read ----

    def search(self, principal: Principal, query: str, k: int) -> SearchResult:
        check_text("query", query)
        hits = self.app.searcher().search(principal.tenant_id, query, k=k)
        return SearchResult(
            hits=[
                SearchHit(
                    title=hit.title,
                    url=hit.url,
                    source=hit.source,
                    kind=hit.kind,
                    external_id=hit.external_id,
                    section=hit.section,
                    snippet=hit.snippet,
                    relevance=hit.relevance,
                    chunk_id=hit.chunk_id,
                )
                for hit in hits
            ]
        )

    def ask(self, principal: Principal, question: str) -> Answer:
        check_text("question", question)
        if len(question) > MAX_QUESTION_CHARS:
            raise InvalidInput(f"the question is longer than {MAX_QUESTION_CHARS} characters")
        from resolveflow.bootstrap.mail_drafts import budgeted_model

        service = AskService(
            self.app.db,
            self.app.searcher(),
            budgeted_model(self.app, principal),
            reranker=self.app.reranker(),
        )
        return ask(service, principal.tenant_id, question, principal_id=principal.id)

    def run_evidence(self, principal: Principal, run_id: str) -> RunEvidence:
        from resolveflow.triage.runs import describe_run

        view = describe_run(self.app.db, principal, _uuid(run_id, "run_id"))
        return RunEvidence(run_id=view["run_id"], status=str(view["status"]), view=view)

    def refine(self, principal: Principal, issue: str | None, text: str | None) -> RefinePacket:
        """Refine a GitHub issue of an allowlisted repository (``OWNER/REPO#N``) or a ticket's
        text; never a file on this machine, whatever the agent names."""
        from resolveflow.bootstrap.refine import step_deps
        from resolveflow.refine.domain.document import RefineDocument, TicketSource
        from resolveflow.refine.graph import refine_document
        from resolveflow.refine.load import STDIN, ticket_for
        from resolveflow.refine.propose import tenant_name

        if (issue is None) == (text is None):
            raise InvalidInput("give the issue (OWNER/REPO#N) or the ticket's text, not both")
        check_text("text", text)
        ticket = ticket_for(issue if issue is not None else STDIN)
        if issue is not None:
            if ticket.repository is None or ticket.source is not TicketSource.GITHUB:
                raise InvalidInput(f"not a GitHub issue: {issue!r} (OWNER/REPO#N)")
            self._check_allowed(principal, ticket.repository)
        name = tenant_name(self.app.db, principal.tenant_id)
        given = text or ""
        deps = step_deps(self.app, lambda: name, lambda: given, principal)
        final = refine_document(RefineDocument(ticket=ticket), deps)
        return RefinePacket(markdown=final.markdown or "", document=final.model_dump(mode="json"))

    # ---- propose ----

    def propose_comment(
        self,
        principal: Principal,
        repository: str,
        issue: int,
        comment: str | None,
        labels: Sequence[str],
        note: str | None,
    ) -> ProposalResult:
        check_text("comment", comment)
        check_texts("labels", labels)
        check_text("note", note)
        proposal = proposal_service.create_proposal(
            self.app.db,
            principal,
            repository=repository,
            issue=issue,
            comment=comment,
            labels=list(labels),
            note=note,
        )
        return self.proposal(principal, proposal.id)

    def propose_github_issue(
        self,
        principal: Principal,
        repository: str,
        title: str,
        body: str,
        labels: Sequence[str],
        assignees: Sequence[str],
        note: str | None,
    ) -> ProposalResult:
        for field, value in (("title", title), ("body", body), ("note", note)):
            check_text(field, value)
        check_texts("labels", labels)
        check_texts("assignees", assignees)
        proposal = proposal_service.create_issue_proposal(
            self.app.db,
            principal,
            repository=repository,
            title=title,
            body=body,
            labels=list(labels),
            assignees=list(assignees),
            note=note,
        )
        return self.proposal(principal, proposal.id)

    def propose_project_issue(
        self,
        principal: Principal,
        project: str,
        title: str,
        body: str,
        labels: Sequence[str],
        assignees: Sequence[str],
    ) -> ProposalResult:
        """A new issue in one of the tenant's project aliases (GitHub or GitLab): the project,
        the labels and the people come from the configuration, never from the agent's text."""
        for field, value in (("project", project), ("title", title), ("body", body)):
            check_text(field, value)
        check_texts("labels", labels)
        check_texts("assignees", assignees)
        targets = IssueTargets(
            policy=self.app.policy,
            gitlab=self.app.gitlab(),
            quiet_rules=self.app.settings.suggestions.rules(),
        )
        view = prepare_issue(
            self.app.db,
            principal,
            targets,
            alias=project,
            title=title,
            body=body,
            labels=labels,
            assignees=assignees,
        )
        return self.proposal(principal, UUID(view["id"]))

    def propose_email_reply(
        self,
        principal: Principal,
        mailbox: str,
        request: str,
        facts: str,
        body: str | None,
    ) -> EmailReplyResult:
        """Draft a reply to ``request`` (a message's source) from ``mailbox`` as ``mail draft``
        does; with ``body``, the agent's text is the draft's next version, checked again. A
        version that passes every check is an ``email.send`` proposal."""
        from resolveflow.bootstrap.mail_drafts import mail_drafts
        from resolveflow.mail.drafts import Edit
        from resolveflow.mail.loader import parse_message

        for field, value in (("mailbox", mailbox), ("request", request), ("facts", facts)):
            check_text(field, value)
        check_text("body", body)
        message = parse_message(
            request.encode("utf-8"), "the request", self.app.settings.mail.bounds()
        )
        service = mail_drafts(self.app, principal)
        record, version = service.draft(principal, mailbox, message, facts)
        if body is not None:
            version = service.edit(principal, record.id, version.version, Edit(body=body))
        proposal = self.proposal(principal, version.proposal_id) if version.proposal_id else None
        return EmailReplyResult(
            draft_id=str(record.id),
            version=version.version,
            findings=[_finding(finding) for finding in version.findings],
            proposal=proposal,
        )

    def _check_allowed(self, principal: Principal, repository: str) -> None:
        with self.app.db.tenant(principal.tenant_id) as conn:
            allowed = tenant_store.repository_allowed(conn, principal.tenant_id, repository)
        if not allowed:
            raise PolicyViolation(f"repository {repository} is not on this tenant's allowlist")


def _finding(finding: dict[str, Any]) -> str:
    check, message = finding.get("check"), finding.get("message")
    return f"{check}: {message}" if check else str(message)


def _uuid(value: str, name: str) -> UUID:
    try:
        return UUID(value.strip())
    except ValueError:
        raise InvalidInput(f"{name}: not an id: {value!r}") from None
