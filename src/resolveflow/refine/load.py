"""Refine's load step: a ticket from GitHub, GitLab, a file or raw text, in one shape.

Every ticket is untrusted data. It is normalized (NUL characters dropped, line endings LF) and cut
at ``MAX_TICKET_CHARS`` with a warning; nothing in it is followed or chooses anything later on. A
ticket that cannot be read is a critical error: the whole refine stops with one line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from resolveflow.adapters.github.protocol import GitHub, RepoName
from resolveflow.adapters.gitlab.protocol import GitLab
from resolveflow.errors import InvalidInput, ResolveFlowError, category_class
from resolveflow.refine.domain.document import (
    MAX_TICKET_CHARS,
    RefineDocument,
    RefineStep,
    StepWarning,
    Ticket,
    TicketSource,
)

STDIN = "-"
GITLAB_PREFIX = "gitlab:"
TITLE_CHARS = 200  # a raw text's title is its first line, cut here
_GITHUB_REF = re.compile(r"^([\w.-]+/[\w.-]+)#(\d+)$")
_GITLAB_REF = re.compile(r"^gitlab:([\w.-]+(?:/[\w.-]+)+)#(\d+)$")


@dataclass(frozen=True)
class TicketReaders:
    """Where tickets come from; each is built only when a ticket of its kind is loaded."""

    github: Callable[[], GitHub] | None = None
    gitlab: Callable[[], GitLab] | None = None
    stdin: Callable[[], str] | None = None


def ticket_for(source: str) -> Ticket:
    """What ``source`` names, before anything is read: ``OWNER/REPO#N``, ``gitlab:GROUP/PROJECT#N``,
    ``-`` (raw text on stdin) or a file path."""
    source = source.strip()
    if source == STDIN:
        return Ticket(source=TicketSource.TEXT, title="")
    if match := _GITLAB_REF.match(source):
        number = int(match.group(2))
        return Ticket(source=TicketSource.GITLAB, ref=f"{match.group(1)}#{number}",
                      repository=match.group(1), number=number, title="")  # fmt: skip
    if match := _GITHUB_REF.match(source):
        number = int(match.group(2))
        repo = match.group(1).lower()
        return Ticket(source=TicketSource.GITHUB, ref=f"{repo}#{number}", repository=repo,
                      number=number, title="")  # fmt: skip
    if source.startswith(GITLAB_PREFIX) or not source:
        raise InvalidInput(f"not a ticket: {source!r} (OWNER/REPO#N, gitlab:GROUP/PROJECT#N, "
                           "a file or - for stdin)")  # fmt: skip
    return Ticket(source=TicketSource.FILE, ref=source, title="")


def load(source: str, readers: TicketReaders) -> RefineDocument:
    """The load step from a reference (the command line's ``REF|-``)."""
    return load_ticket(RefineDocument(ticket=ticket_for(source)), readers)


_REPOSITORY = re.compile(r"^[\w.-]+(/[\w.-]+)+$")


def with_repository(ticket: Ticket, repository: str) -> Ticket:
    """A file or text ticket said to concern ``repository`` (its clone, its rules); a forge
    ticket names its own."""
    if ticket.source in (TicketSource.GITHUB, TicketSource.GITLAB):
        raise InvalidInput("--repo is for a file or text ticket; OWNER/REPO#N names its own")
    name = repository.strip()
    if not _REPOSITORY.fullmatch(name):
        raise InvalidInput(f"--repo must look like OWNER/REPO, got {repository!r}")
    return ticket.model_copy(update={"repository": name.lower()})


def load_ticket(doc: RefineDocument, readers: TicketReaders) -> RefineDocument:
    """The load step on a document whose ticket says where it comes from: a forge ticket or a file
    is read again; a text ticket's title and body are taken as given (stdin when both are empty)."""
    stub = doc.ticket
    try:
        ticket = _read(stub, readers)
    except ResolveFlowError as exc:
        where = stub.ref or "the ticket"
        raise category_class(exc)(f"{where} could not be read: {exc.message}") from None
    out = doc.model_copy(deep=True)
    out.ticket, cut = _normalized(ticket)
    if cut:
        out.warnings.append(
            StepWarning(
                step=RefineStep.LOAD,
                message=(
                    f"the ticket is {cut} characters long; only the first {MAX_TICKET_CHARS} are used"
                ),
            )
        )
    out.done.append(RefineStep.LOAD)
    return out


def _read(stub: Ticket, readers: TicketReaders) -> Ticket:
    if stub.source == TicketSource.GITHUB:
        return _github(stub, readers)
    if stub.source == TicketSource.GITLAB:
        return _gitlab(stub, readers)
    if stub.source == TicketSource.FILE:
        return _file(stub)
    if stub.title:
        return stub
    if stub.body:
        return _text(stub.body, stub)
    if readers.stdin is None:
        raise InvalidInput("the ticket text is empty")
    return _text(readers.stdin(), stub)


def _github(stub: Ticket, readers: TicketReaders) -> Ticket:
    if readers.github is None or stub.repository is None or stub.number is None:
        raise InvalidInput("a GitHub ticket needs OWNER/REPO#N")
    issue = readers.github().get_issue(RepoName.parse(stub.repository), stub.number)
    return stub.model_copy(update={
        "title": issue.title, "body": issue.body, "created_at": issue.created_at,
        "labels": list(issue.labels), "url": issue.url})  # fmt: skip


def _gitlab(stub: Ticket, readers: TicketReaders) -> Ticket:
    if readers.gitlab is None or stub.repository is None or stub.number is None:
        raise InvalidInput("a GitLab ticket needs gitlab:GROUP/PROJECT#N and a configured GitLab")
    client = readers.gitlab()
    project = client.project(stub.repository)
    issue = client.issue(project.id, stub.number)
    return stub.model_copy(update={
        "repository": project.path, "ref": f"{project.path}#{issue.iid}",
        "title": issue.title, "body": issue.description, "created_at": issue.created_at,
        "labels": list(issue.labels), "url": issue.url})  # fmt: skip


def _file(stub: Ticket) -> Ticket:
    path = Path(stub.ref or "")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {path}") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
    return _text(text, stub.model_copy(update={"ref": path.name}))


def _text(text: str, stub: Ticket) -> Ticket:
    """Raw text (an email or a chat fragment): its first non-empty line is the title."""
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n")]
    first = next((line for line in lines if line), "")
    if not first:
        raise InvalidInput("the ticket text is empty")
    return stub.model_copy(update={"title": first[:TITLE_CHARS], "body": text})


def _clean(text: str) -> str:
    return text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")


def _normalized(ticket: Ticket) -> tuple[Ticket, int]:
    """The ticket with clean text, cut to ``MAX_TICKET_CHARS`` in all; returns how long it was
    when it had to be cut (0 otherwise)."""
    title, body = _clean(ticket.title).strip()[:TITLE_CHARS], _clean(ticket.body)
    if not title:
        raise InvalidInput("the ticket has no title or text")
    total = len(title) + len(body)
    if total <= MAX_TICKET_CHARS:
        return ticket.model_copy(update={"title": title, "body": body}), 0
    body = body[: MAX_TICKET_CHARS - len(title)]
    return ticket.model_copy(update={"title": title, "body": body}), total
