"""The ask pages: ``/ask`` (a question, its answer with numbered citations, or the abstention
with related documents), ``/passages/{chunk_id}`` (a cited passage in its document) and "Open an
issue from this answer" (``/ask/issue``: a form prefilled from the answer, which prepares a
proposal through ``service/issues_prepare`` and goes to the proposal's page).

Document text is data from outside: answers, quotes and a passage's chunks are rendered as
Markdown through the sanitizer every other page uses (``web/markdown.py``: an allowlist of tags,
no scripts, no images loaded), and only http(s) addresses become links (docs/ask.md, "How an
answer from an HTML page reads"). Forms carry the session's CSRF token
and work without JavaScript; asking answers the page itself (answers are not stored).
"""

from __future__ import annotations

import re
from html import unescape as html_unescape
from typing import Any

from fastapi import APIRouter, Form, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup, escape

from resolveflow.accounts import admin
from resolveflow.ask import passages
from resolveflow.ask.domain.answers import Answer, AnswerOutcome
from resolveflow.ask.issues_prepare import IssueTargets, prepare_issue
from resolveflow.domain import reading_text
from resolveflow.domain.inert_markdown import inert
from resolveflow.domain.records import Role
from resolveflow.errors import InvalidInput
from resolveflow.gate.decisions import reject_unstorable
from resolveflow.web.api_ask import answer_question, passage_link
from resolveflow.web.markdown import render
from resolveflow.web.security import Viewer, check_csrf, identify, wired
from resolveflow.web.words import ANSWER_FEATURES, generator_words

router = APIRouter(include_in_schema=False)

MAX_TITLE = 256
MAX_BODY = 65_000
TITLE_CHARS = 120  # a prefilled title: the question's start
SOURCE_NAME_CHARS = 200  # a source's title or path in a prefilled body
_MARKER = re.compile(r"\[(\d{1,3})\]")
_BIGINT = 2**63 - 1
_CITE = Markup('<a class="cite" href="{0}" aria-label="citation {1}">[{1}]</a>')


def _render(request: Request, template: str, viewer: Viewer, **values: Any) -> Response:
    response: Response = request.app.state.templates.TemplateResponse(
        request, template, {"viewer": viewer, "notice": None, **values}
    )
    return response


def _form_viewer(request: Request, csrf_token: str) -> Viewer:
    viewer = identify(request)
    check_csrf(request, viewer, csrf_token)
    return viewer


@router.get("/ask", response_class=HTMLResponse)
def ask_page(request: Request) -> Response:
    return _render(request, "ask.html", identify(request), question="", answer=None)


@router.post("/ask", response_class=HTMLResponse)
def ask_question(
    request: Request, question: str = Form(""), csrf_token: str = Form("")
) -> Response:
    viewer = _form_viewer(request, csrf_token)
    answer = answer_question(request, viewer.principal, question)
    return _render(
        request, "ask.html", viewer, question=answer.question, answer=_view(request, answer)
    )


def _view(request: Request, answer: Answer) -> dict[str, Any]:
    links = {c.n: passage_link(c.chunk_id) for c in answer.citations}
    features = answer.features.model_dump() if answer.features else {}
    return {
        "abstained": answer.abstained,
        "tentative": answer.outcome is AnswerOutcome.TENTATIVE,
        "text": _linked(_document_markdown(answer.text), links),
        "citations": [
            {
                **c.model_dump(),
                "section": _section(c.title, c.section),
                "link": links[c.n],
                "quote_html": _document_markdown(c.quote),
            }
            for c in answer.citations
        ],
        "related": [{**d.model_dump(), "link": passage_link(d.chunk_id)} for d in answer.related],
        "features": [(ANSWER_FEATURES.get(k, k), f"{v:.2f}") for k, v in features.items()],
        "generator": generator_words(answer.generator),
        "issue_title": _title(answer.question),
        "issue_body": issue_body(answer, _base_url(request)),
    }


def _section(title: str, section: str) -> str:
    """A citation's section as words, or none when it only repeats the page's title."""
    words = reading_text.heading_text(section)
    return "" if words == title else words


_PRE = re.compile(r"(<pre\b.*?</pre>)", re.S)
_ANCHOR = re.compile(r"<a\b([^>]*)>(.*?)</a>", re.S)
_HREF = re.compile(r'\bhref="([^"]*)"')
_WEB = re.compile(r"https?://", re.IGNORECASE)
_ADDRESS_LIKE = re.compile(r"://|\bwww\.|\b[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}\b", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")
_CODE = Markup("<code>{}</code>")
_HEADING_TAG = re.compile(r"<(/?)h([1-6])>")


def _document_markdown(text: str, *, raw_html: bool = True) -> Markup:
    """A document's Markdown rendered through the sanitizer. A link to the web (http or https)
    stays a link (``rel=nofollow``, its address in its title), unless its words look like an
    address themselves: a page in the corpus can word a link as one address and point it at
    another, so then the words are text beside the real address. Any other link (a relative
    path that leads nowhere from here, ``mailto:``) is its words only. Tables render as tables.
    """
    html = str(render(reading_text.outdented_definitions(text), raw_html=raw_html))

    def plain(match: re.Match[str]) -> str:
        href = _HREF.search(match.group(1))
        label = match.group(2)
        address = html_unescape(href.group(1)) if href else ""
        if not _WEB.match(address):
            return label
        words = html_unescape(_TAG.sub("", label))
        if words != address and _ADDRESS_LIKE.search(words):
            return f'{label} <code class="address">{escape(address)}</code>'
        title = Markup(' title="{}"').format(address)
        return f"<a{match.group(1)}{title}>{label}</a>"

    return Markup(_ANCHOR.sub(plain, html))  # noqa: S704 - sanitized, anchors checked


def reading_html(text: str) -> Markup:
    """A chunk's text for the passage page. A chunk may start or end inside a paragraph, a
    table or a block: its prose is rendered as a document's Markdown (HTML in it shown as text,
    since a cut can leave a tag half-written), and a table as an HTML table, each cell escaped,
    found even when the chunk's edge cut its rows from their header."""
    return Markup("").join(
        _table_html(block)
        if isinstance(block, reading_text.Table)
        else _under_the_title(_document_markdown(block, raw_html=False))
        for block in reading_text.blocks(reading_text.outdented_definitions(text))
    )


def _under_the_title(html: Markup) -> Markup:
    """A chunk's headings two levels down: the page's own ``<h1>`` is the document's title."""
    return Markup(  # noqa: S704 - sanitized HTML, only heading tags renamed
        _HEADING_TAG.sub(lambda m: f"<{m.group(1)}h{min(int(m.group(2)) + 2, 6)}>", str(html))
    )


def _table_html(table: reading_text.Table) -> Markup:
    def row(cells: tuple[str, ...], tag: str) -> Markup:
        return Markup("<tr>{}</tr>").format(
            Markup("").join(Markup("<{0}>{1}</{0}>").format(tag, _cell(c)) for c in cells)
        )

    head = Markup("<thead>{}</thead>").format(row(table.header, "th")) if table.header else ""
    body = Markup("").join(row(cells, "td") for cells in table.rows)
    return Markup('<table class="doc-table">{}<tbody>{}</tbody></table>').format(head, body)


def _cell(text: str) -> Markup:
    return Markup("").join(
        _CODE.format(piece) if is_code else escape(reading_text.plain(piece))
        for piece, is_code in reading_text.code_spans(text)
    )


def _linked(html: Markup, links: dict[int, str]) -> Markup:
    """The rendered (sanitized) answer with its citation markers ``[n]`` made links to their
    passages; code blocks are left alone (``[1]`` is also what R prints)."""
    pieces: list[Markup] = []
    for n, piece in enumerate(_PRE.split(str(html))):
        if n % 2:
            pieces.append(Markup(piece))  # noqa: S704 - a piece of the sanitized HTML
            continue
        pieces.append(Markup(_MARKER.sub(lambda m: _cite(m, links), piece)))  # noqa: S704
    return Markup("").join(pieces)


def _cite(match: re.Match[str], links: dict[int, str]) -> str:
    n = int(match.group(1))
    return str(_CITE.format(links[n], n)) if n in links else match.group(0)


def _title(question: str) -> str:
    flat = " ".join(question.split())
    return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1].rstrip() + "…"


def _base_url(request: Request) -> str:
    public = wired(request).settings.web.public_url
    return (public or str(request.base_url)).rstrip("/")


def issue_body(answer: Answer, base_url: str) -> str:
    """The prefilled issue body (Markdown): the question, the answer and its sources as links
    to their passage pages. The person edits it before anything is proposed."""
    lines = ["**Question**", "", _quoted(answer.question), ""]
    if answer.outcome is not AnswerOutcome.ANSWERED:
        lines += ["No source in our documents answers this for sure. Closest documents:", ""]
        lines += [
            f"- [{_md(d.title)}]({base_url}{passage_link(d.chunk_id)}) ({_md(d.path)})"
            for d in answer.related
        ]
    else:
        lines += [
            "**Answer** (from ResolveFlow Ask)",
            "",
            _quoted(answer.text),
            "",
            "**Sources**",
            "",
        ]
        for c in answer.citations:
            name = f"{c.title} § {c.section}" if c.section else c.title
            url = f"{base_url}{passage_link(c.chunk_id)}"
            lines.append(f"[{c.n}] [{_md(name)}]({url}) ({_md(c.path)})  ")
    return "\n".join(lines).strip() + "\n"


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _md(text: str) -> str:
    """A document's title or path in the issue body: inert, like everything posted (it can
    neither close the link it sits in nor mention anyone)."""
    return inert(text, SOURCE_NAME_CHARS)


@router.get("/passages/{chunk_id}", response_class=HTMLResponse)
def passage_page(request: Request, chunk_id: int = Path(ge=1, le=_BIGINT)) -> Response:
    viewer = identify(request)
    found = passages.passage(wired(request).db, viewer.principal, chunk_id)
    return _render(
        request,
        "passage.html",
        viewer,
        document=found.document,
        parts=[
            {"chunk_id": p.chunk_id, "cited": p.cited, "html": reading_html(p.text)}
            for p in found.parts
        ],
        chunk_id=found.chunk_id,
    )


@router.post("/ask/issue", response_class=HTMLResponse)
def issue_form(
    request: Request, title: str = Form(""), body: str = Form(""), csrf_token: str = Form("")
) -> Response:
    """The form, prefilled; nothing is proposed until it is sent to ``/ask/issue/create``."""
    viewer = _form_viewer(request, csrf_token)
    return _render(
        request,
        "issue_from_answer.html",
        viewer,
        title=title[:MAX_TITLE],
        body=body[:MAX_BODY],
        aliases=_aliases(request, viewer),
        may_prepare=viewer.principal.has(Role.REQUESTER),
    )


def _aliases(request: Request, viewer: Viewer) -> list[dict[str, Any]]:
    app = wired(request)
    tenant = next(t for t in admin.list_tenants(app.db) if t.id == viewer.principal.tenant_id)
    projects = app.policy().projects(tenant.name)
    return [
        {"name": name, "forge": alias.forge, "project": alias.project, "labels": alias.labels}
        for name, alias in sorted(projects.items())
    ]


@router.post("/ask/issue/create")
def create_issue(
    request: Request,
    alias: str = Form(""),
    title: str = Form(""),
    body: str = Form(""),
    labels: str = Form(""),
    csrf_token: str = Form(""),
) -> Response:
    viewer = _form_viewer(request, csrf_token)
    reject_unstorable(alias, title, body, labels)
    if not title.strip():
        raise InvalidInput("the issue needs a title")
    if len(title) > MAX_TITLE or len(body) > MAX_BODY or len(labels) > 2000:
        raise InvalidInput(f"the title (up to {MAX_TITLE}) or the body is too long")
    app = wired(request)
    view = prepare_issue(
        app.db,
        viewer.principal,
        IssueTargets(app.policy, app.gitlab(), app.settings.suggestions.rules()),
        alias=alias,
        title=title.strip(),
        body=body,
        labels=[name.strip() for name in labels.split(",") if name.strip()],
    )
    return RedirectResponse(f"/proposals/{view['id']}", status_code=303)
