"""The forge browsable as HTML, at the ``html_url`` paths its JSON hands out.

A person following a link from ResolveFlow's pages ("on the forge", "CI", "Posted") lands here
instead of on a 401 JSON answer: the repository (``/{owner}/{repo}``), an issue or pull request
(``/{owner}/{repo}/issues/{n}``, ``/pull/{n}``: title, state, body, labels and every comment in
order with its author and anchor ``#issuecomment-{id}``), a check run (``/{owner}/{repo}/runs/{id}``)
and a workflow run (``/{owner}/{repo}/actions/runs/{id}``). Every page says it is the sandbox forge,
not GitHub. The routes are public (no token, not counted, no faults) and come after the API's in
the table, so an API path never reaches them. All text is escaped. Bodies are rendered from
Markdown as GitHub renders them, sanitized (nh3, an allowlist of tags), and HTML comments, the
executor's hidden marker among them, are dropped as GitHub hides them; ``/favicon.ico`` answers 204.
"""

from __future__ import annotations

import html
from functools import cache

import nh3
from markdown_it import MarkdownIt

from resolveflow.sandbox.forge.model import FakeRequest, IssueRecord, RepoRecord
from resolveflow.sandbox.forge.routing import Route, route
from resolveflow.sandbox.forge.state import ForgeState
from resolveflow.sandbox.loopback import Reply

# An owner that is a word of the API (``/repos/...``, ``/login/...``) never names a repository.
_OWNER = r"(?!(?:repos|login|user|users|orgs|apps)/)([^/]+)"
_REPO = rf"/{_OWNER}/([^/]+)"
_STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;color:#1f2328;max-width:60rem;margin:0 auto;"
    "padding:0 1.5rem 2rem}.banner{background:#fde68a;padding:.4rem 1rem;font-weight:600;"
    "margin:0 -1.5rem 1rem}.muted{color:#59636e}.label{display:inline-block;border-radius:1em;"
    "padding:0 .55em;margin-right:.2em;background:#ddf4ff;border:1px solid #b6e3ff;font-size:.85em}"
    ".state{border-radius:1em;padding:.1em .7em;color:#fff;background:#1a7f37}"
    ".state.closed{background:#8250df}.box{border:1px solid #d1d9e0;border-radius:6px;"
    "margin:.8rem 0}.box header{background:#f6f8fa;border-bottom:1px solid #d1d9e0;"
    "padding:.4rem .8rem}.box pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;"
    "padding:.6rem .8rem;font:inherit}.box:target{border-color:#0969da}"
    ".md{padding:.2rem .8rem;overflow-wrap:anywhere}.md pre{background:#f6f8fa;padding:.5rem}"
    ".md code{font-family:ui-monospace,monospace}"
    "table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem .5rem;"
    "border-bottom:1px solid #d1d9e0}"
)


def _page(status: int, title: str, body: str) -> Reply:
    text = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)} · sandbox forge</title><style>{_STYLE}</style></head><body>"
        "<div class='banner' id='sandbox-forge'>Sandbox forge, not GitHub: ResolveFlow's local "
        "stand-in. Nothing here is real.</div>"
        f"<h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    return Reply(status, raw=text.encode("utf-8"), content_type="text/html; charset=utf-8")


def _missing(what: str) -> Reply:
    return _page(404, "Not found", f"<p>The sandbox forge has no {html.escape(what)}.</p>")


def _repo(forge: ForgeState, request: FakeRequest) -> RepoRecord | None:
    owner, name = request.params[0], request.params[1]
    return forge.repos.get(f"{owner}/{name}")


def _at(stamp: str | None) -> str:
    """GitHub's ``2026-05-01T14:03:09Z`` as ResolveFlow's pages show moments."""
    return html.escape(stamp.replace("T", " ")[:16] + " UTC") if stamp else "–"


def _esc(value: object) -> str:
    return html.escape(str(value))


# GitHub's rendering, roughly: its tags, minus images (nothing here fetches from elsewhere).
_TAGS = {
    "a", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "ins", "kbd", "li", "ol", "p", "pre",
    "q", "s", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr",
    "ul",
}  # fmt: skip
_MAX_RENDERED = 200_000


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def _markdown(text: str | None) -> str:
    """``text`` as GitHub shows it: Markdown rendered, sanitized, HTML comments hidden."""
    source = (text or "")[:_MAX_RENDERED]
    try:
        raw = _parser().render(source)
    except Exception:  # markdown-it raises IndexError on a few inputs: show the text instead
        return f"<pre>{_esc(source)}</pre>"
    return nh3.clean(
        raw,
        tags=_TAGS,
        attributes={"a": {"href", "title"}, "code": {"class"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="nofollow noopener noreferrer",
        strip_comments=True,
    )


def _link(href: str, text: str) -> str:
    return f"<a href='{html.escape(href, quote=True)}'>{html.escape(text)}</a>"


def repository_page(forge: ForgeState, request: FakeRequest) -> Reply:
    repo = _repo(forge, request)
    if repo is None:
        return _missing(f"repository {request.params[0]}/{request.params[1]}")
    rows = "".join(
        f"<tr><td>#{issue.number}</td><td>"
        f"{_link(_issue_path(repo, issue), issue.title)}</td>"
        f"<td>{'pull request' if issue.is_pull_request else 'issue'}</td>"
        f"<td>{_esc(issue.state)}</td><td>{len(issue.comments)}</td></tr>"
        for issue in sorted(repo.issues.values(), key=lambda i: i.number, reverse=True)
    )
    runs = "".join(
        f"<li>{_link(f'/{repo.full_name}/runs/{run.id}', run.name)}: "
        f"{_esc(run.conclusion or run.status)}</li>"
        for run in repo.check_runs.values()
    )
    body = (
        f"<p class='muted'>Labels: {_labels(repo, list(repo.labels))}</p>"
        "<table id='issues'><thead><tr><th>#</th><th>Title</th><th>Kind</th><th>State</th>"
        f"<th>Comments</th></tr></thead><tbody>{rows}</tbody></table>"
        + (f"<h2>Check runs</h2><ul id='check-runs'>{runs}</ul>" if runs else "")
    )
    return _page(200, repo.full_name, body)


def _issue_path(repo: RepoRecord, issue: IssueRecord) -> str:
    kind = "pull" if issue.is_pull_request else "issues"
    return f"/{repo.full_name}/{kind}/{issue.number}"


def _labels(repo: RepoRecord, keys: list[str]) -> str:
    names = [repo.labels[key].name for key in keys if key in repo.labels]
    shown = "".join(f"<span class='label'>{_esc(name)}</span>" for name in names)
    return shown or "<span class='muted'>none</span>"


def issue_page(forge: ForgeState, request: FakeRequest) -> Reply:
    repo = _repo(forge, request)
    number = int(request.params[2])
    issue = repo.issues.get(number) if repo is not None else None
    if repo is None or issue is None:
        return _missing(f"issue #{number} in {request.params[0]}/{request.params[1]}")
    comments = "".join(
        f"<div class='box comment' id='issuecomment-{_esc(c['id'])}'>"
        f"<header><strong class='author'>{_esc(c['user']['login'])}</strong> "
        f"<span class='muted'>commented {_at(c['created_at'])}</span></header>"
        f"<div class='comment-body md'>{_markdown(c['body'])}</div></div>"
        for c in issue.comments
    )
    body = (
        f"<p><span class='state {_esc(issue.state)}' id='issue-state'>{_esc(issue.state)}</span> "
        f"<span class='muted'>#{issue.number} opened by <strong>{_esc(issue.user)}</strong> "
        f"{_at(issue.created_at)} in {_link('/' + repo.full_name, repo.full_name)}</span></p>"
        f"<p id='issue-labels'>Labels: {_labels(repo, issue.labels)}</p>"
        + (f"<p>Assignees: {_esc(', '.join(issue.assignees))}</p>" if issue.assignees else "")
        + f"<div class='box'><header><strong>{_esc(issue.user)}</strong></header>"
        f"<div class='md' id='issue-body'>{_markdown(issue.body)}</div></div>"
        f"<h2>{len(issue.comments)} comment{'' if len(issue.comments) == 1 else 's'}</h2>"
        f"<div id='comments'>{comments}</div>"
    )
    return _page(200, f"{issue.title} #{issue.number}", body)


def check_run_page(forge: ForgeState, request: FakeRequest) -> Reply:
    repo = _repo(forge, request)
    run_id = int(request.params[2])
    run = repo.check_runs.get(run_id) if repo is not None else None
    if repo is None or run is None:
        return _missing(f"check run {run_id}")
    facts = {
        "Status": run.status,
        "Conclusion": run.conclusion or "not finished",
        "Commit": run.head_sha,
        "Started": run.started_at,
        "Completed": run.completed_at or "–",
    }
    body = _facts(facts) + (f"<pre>{_esc(run.summary)}</pre>" if run.summary else "")
    return _page(200, f"Check run: {run.name}", body)


def workflow_run_page(forge: ForgeState, request: FakeRequest) -> Reply:
    repo = _repo(forge, request)
    run_id = int(request.params[2])
    run = repo.workflow_runs.get(run_id) if repo is not None else None
    if repo is None or run is None:
        return _missing(f"workflow run {run_id}")
    facts = {
        "Run": f"{run.display_title} (#{run.run_number})",
        "Status": run.status,
        "Conclusion": run.conclusion or "not finished",
        "Branch": run.head_branch,
        "Commit": run.head_sha,
        "Event": run.event,
        "Started by": run.actor,
        "Updated": run.updated_at,
    }
    return _page(200, f"Workflow run: {run.name}", _facts(facts))


def _facts(facts: dict[str, str]) -> str:
    rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in facts.items())
    return f"<table id='run'>{rows}</table>"


def index_page(forge: ForgeState, request: FakeRequest) -> Reply:
    items = "".join(f"<li>{_link('/' + name, name)}</li>" for name in sorted(forge.repos))
    return _page(200, "Repositories", f"<ul id='repositories'>{items}</ul>")


def favicon(forge: ForgeState, request: FakeRequest) -> Reply:
    """Browsers ask for it on every page: no icon, and no 401 for it."""
    return Reply(204, raw=b"", content_type="image/x-icon")


ROUTES: list[Route[ForgeState]] = [
    route("GET", r"/?", index_page, public=True),
    route("GET", r"/favicon\.ico", favicon, public=True),
    route("GET", _REPO, repository_page, public=True),
    route("GET", rf"{_REPO}/(?:issues|pull)/(\d+)", issue_page, public=True),
    route("GET", rf"{_REPO}/runs/(\d+)", check_run_page, public=True),
    route("GET", rf"{_REPO}/actions/runs/(\d+)", workflow_run_page, public=True),
]
