"""The sandbox forge's issue page shows a posted comment as GitHub does: Markdown rendered,
sanitized, the executor's hidden marker not shown; and its ``/favicon.ico`` needs no token."""

from __future__ import annotations

import re

import httpx

from fixtures_github import REPO, SERVICE_TOKEN
from resolveflow.sandbox.forge.server import FakeGitHubServer

MARKER = "<!-- resolveflow:action=0b7e1c2a-0000-4000-8000-000000000001 -->"
COMMENT = (
    "Thanks for the report! The **failing CI check** is `tests (3.12)`:\n\n"
    "- [the run](https://example.com/run/1)\n- a second point\n\n"
    "<script>window.__xss=1</script><a href='javascript:alert(1)' onclick='x()'>bad</a>\n\n"
    + MARKER
)


def _page(fake: FakeGitHubServer, number: int) -> str:
    answer = httpx.get(f"{fake.url}/{REPO.full_name}/issues/{number}", timeout=5)
    assert answer.status_code == 200
    return answer.text


def test_a_posted_comment_is_rendered_and_its_marker_hidden(fake_github: FakeGitHubServer) -> None:
    posted = httpx.post(
        f"{fake_github.url}/repos/{REPO.full_name}/issues/1/comments",
        json={"body": COMMENT},
        headers={"Authorization": f"token {SERVICE_TOKEN}"},
        timeout=5,
    )
    assert posted.status_code == 201
    assert fake_github.comments(REPO.full_name, 1)[0]["body"] == COMMENT  # stored exactly
    text = _page(fake_github, 1)
    body = re.search(r"<div class='comment-body md'>(.*?)</div></div>", text, re.S)
    assert body is not None, text
    shown = body.group(1)
    assert "<strong>failing CI check</strong>" in shown and "<code>tests (3.12)</code>" in shown
    assert '<li><a href="https://example.com/run/1"' in shown  # a list, with its link
    assert "resolveflow:action" not in text and "<!--" not in shown and "&lt;!--" not in shown
    assert "**" not in shown  # no Markdown source left
    assert "<script" not in shown and "javascript:" not in shown and "onclick" not in shown


def test_the_issue_body_is_rendered_too(fake_github: FakeGitHubServer) -> None:
    fake_github.add_issue(REPO.full_name, 5, "Rendered", "## Steps\n\n1. start\n2. *crash*")
    text = _page(fake_github, 5)
    assert "<h2>Steps</h2>" in text and "<em>crash</em>" in text and "## Steps" not in text


def test_the_favicon_needs_no_token_and_is_not_counted(fake_github: FakeGitHubServer) -> None:
    before = fake_github.requests_received
    answer = httpx.get(f"{fake_github.url}/favicon.ico", timeout=5)
    assert answer.status_code == 204 and answer.content == b""
    assert fake_github.requests_received == before
    # The API itself still wants a token.
    assert httpx.get(f"{fake_github.url}/user", timeout=5).status_code == 401
