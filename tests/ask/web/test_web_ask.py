"""Ask through the web: ``POST /api/v1/ask``, the ``/ask`` page, the passage page and "Open an
issue from this answer", on the tiny runbook corpus (tests/data/runbooks-mini) and the default
embedder (answerability is calibrated on the index). Another tenant's documents are never cited; document text renders inert."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from fastapi.testclient import TestClient
from test_web_security import active_parts, sign_in, signed_web  # noqa: F401

from conftest import make_world
from fixtures_web import Web, add_approver, web_settings
from resolveflow.accounts import admin
from resolveflow.ask import passages
from resolveflow.ask.domain.answers import ABSTENTION_TEXT
from resolveflow.ask.store import answers as answers_store
from resolveflow.bootstrap.app import App, open_app
from resolveflow.retrieval.records import SourceDocument
from resolveflow.retrieval.sources import read_docs_dir
from resolveflow.sandbox.forge.oauth import FakeGitHubWithOAuth
from resolveflow.web import create_app

pytest_plugins = ["fixtures_web"]

MINI = Path(__file__).parents[2] / "data" / "runbooks-mini" / "corpus"
ALERT = (
    "One or more targets are unreachable. 0.93% of the node-exporter/kubelet targets in "
    "kube-system namespace are down."
)
BREAD = "How long should a rye sourdough loaf proof before baking?"
HTML = {"Accept": "text/html"}
POLICY = """
[tenants.acme.projects.widgets]
forge = "github"
project = "acme/widgets"
labels = ["bug", "question"]
"""
# The other tenant's copy of the runbook: never cited for acme.
EVIL_DOC = SourceDocument(
    source="docs",
    external_id="evil/TargetDown.md",
    kind="doc",
    title="TargetDown",
    body="# TargetDown\n\n## Diagnosis\n\nEVIL-ONLY: targets unreachable in kube-system, "
    "node-exporter kubelet targets are down.\n\n## Mitigation\n\nEVIL-ONLY mitigation.",
)
XSS_DOC = SourceDocument(
    source="docs",
    external_id="general/ReactorOverheating.md",
    kind="doc",
    title="ReactorOverheating <script>window.__xss=1</script>",
    url="javascript:window.__xss=2",
    body=(
        "# ReactorOverheating\n\n## Diagnosis\n\nThe flux capacitor overheats. "
        '<script>window.__xss=3</script><img src=x onerror="window.__xss=4"> See '
        "[https://docs.acme.example/reactor](https://evil.example/steal).\n\n"
        "## Mitigation\n\nCool the flux capacitor reactor. "
        '<a href="javascript:window.__xss=5">docs</a>'
    ),
)
XSS_QUESTION = "Reactor overheating: the flux capacitor overheats"


def _index(app: App) -> None:
    acme = admin.find_tenant(app.db, "acme").id
    evil = admin.find_tenant(app.db, "evil").id
    app.indexer().upsert(acme, [*read_docs_dir(MINI, "docs"), XSS_DOC])
    app.indexer().upsert(evil, [EVIL_DOC])


@pytest.fixture
def asking(queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path) -> Iterator[Web]:
    """The web app with the runbooks indexed for acme, a twin for evil, and a policy file that
    gives acme one project alias."""
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    # The real default embedder: answerability is calibrated on the tenant's index, and a
    # hashing embedder puts off-topic questions as close as related ones.
    settings = web_settings(queue_ready, oauth_github.url, policy_file=policy, embedder="local")
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        admin.add_tenant(app.db, "evil")
        _index(app)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            yield Web(app, world, oauth_github, client)


def _ask(web: Web, question: Any, token: str | None = None) -> Any:
    return web.client.post(
        "/api/v1/ask",
        json={"question": question},
        headers=web.api(token or web.world.approver_token),
    )


def _page(web: Web, path: str, token: str | None = None) -> str:
    response = web.client.get(path, headers={**HTML, **web.api(token or web.world.approver_token)})
    assert response.status_code == 200, response.text
    return response.text


def _asked_page(web: Web, question: str, token: str | None = None) -> str:
    response = web.client.post(
        "/ask",
        data={"question": question},
        headers={**HTML, **web.api(token or web.world.approver_token)},
    )
    assert response.status_code == 200, response.text
    return response.text


# --- the API -------------------------------------------------------------------------------


def test_the_api_answers_with_citations_that_link_to_their_passages(asking: Web) -> None:
    response = _ask(asking, ALERT)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["abstained"] is False
    assert [c["n"] for c in answer["citations"]] == [1, 2]
    first = answer["citations"][0]
    assert first["path"] == "general/TargetDown.md" and first["title"] == "TargetDown"
    assert first["section"] == "Diagnosis" and "`up == 0` query" in first["quote"]
    assert first["link"] == f"/passages/{first['chunk_id']}#chunk-{first['chunk_id']}"
    assert set(answer["features"]) >= {"top_cosine", "term_coverage", "margin"}
    # The ask is recorded under the principal who asked (the CLI records none).
    asker = asking.world.approver(asking.db)
    with asking.db.tenant(asker.tenant_id) as conn:
        record = answers_store.ask_record(conn, asker.tenant_id, UUID(answer["record_id"]))
    assert record is not None and record.principal_id == asker.id
    # The link leads to the passage in its document, for a requester of the tenant too.
    passage = _page(asking, first["link"].split("#")[0], asking.world.requester_token)
    assert f'id="chunk-{first["chunk_id"]}"' in passage
    assert "<code>up == 0</code> query" in passage  # the passage page sets code as code


def test_no_source_is_the_fixed_abstention_with_related_documents(asking: Web) -> None:
    answer = _ask(asking, BREAD).json()
    assert answer["abstained"] is True and answer["text"] == ABSTENTION_TEXT
    assert answer["citations"] == [] and answer["related"]
    assert all(r["link"].startswith("/passages/") for r in answer["related"])


def test_another_tenants_documents_are_never_cited_or_shown(asking: Web) -> None:
    mine = _ask(asking, ALERT).json()
    shown = [c["path"] for c in mine["citations"]] + [r["path"] for r in mine["retrieved"]]
    assert shown and not any(path.startswith("evil/") for path in shown)
    assert "EVIL-ONLY" not in str(mine)
    evil_token = add_approver(asking, "evil", "eve")
    theirs = _ask(asking, ALERT, evil_token).json()
    [evil_chunk] = {c["chunk_id"] for c in theirs["citations"]}
    assert all(c["path"] == "evil/TargetDown.md" for c in theirs["citations"])
    # Acme cannot open evil's passage: the HTML not-found page, never JSON.
    page = asking.client.get(
        f"/passages/{evil_chunk}", headers={**HTML, **asking.api(asking.world.approver_token)}
    )
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert "EVIL-ONLY" not in page.text


def test_a_question_past_the_limit_is_one_clear_4xx(asking: Web) -> None:
    assert _ask(asking, "disk " * 800).status_code == 200  # 4,000 characters: fine
    response = _ask(asking, "x" * 4001)
    assert response.status_code == 422
    assert "4000 characters" in response.json()["message"]


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"question": 5}',
        b'{"question": ""}',
        b'{"question": "   "}',
        b'{"question": "a\\u0000b"}',
        b'{"question": "lone \\ud800 surrogate"}',
        b'{"question": "ok", "extra": 1}',
        b'{"question": null}',
        b"{}",
    ],
)
def test_junk_is_a_4xx_never_a_500(asking: Web, body: bytes) -> None:
    response = asking.client.post(
        "/api/v1/ask",
        content=body,
        headers={**asking.api(asking.world.approver_token), "Content-Type": "application/json"},
    )
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["message"]


def test_asking_needs_a_principal(asking: Web) -> None:
    assert asking.client.post("/api/v1/ask", json={"question": ALERT}).status_code == 401
    assert asking.client.get("/ask", follow_redirects=False).headers["location"] == "/login"


# --- the pages -----------------------------------------------------------------------------


def test_the_ask_page_has_a_labelled_question_box_and_is_in_the_navigation(asking: Web) -> None:
    page = _page(asking, "/ask")
    assert re.search(r'<label for="question">[^<]+</label>', page)
    assert re.search(r'<textarea[^>]*id="question"[^>]*name="question"', page)
    assert '<a href="/ask">Ask</a>' in _page(asking, "/inbox")


def test_the_page_shows_the_answer_with_numbered_citations_to_passage_pages(asking: Web) -> None:
    page = _asked_page(asking, ALERT)
    assert 'id="answer"' in page and ABSTENTION_TEXT not in page
    links = re.findall(r'href="(/passages/(\d+)#chunk-\d+)"', page)
    assert links, page
    cited = {chunk for _, chunk in links}
    assert re.search(r'<a [^>]*href="/passages/\d+#chunk-\d+"[^>]*>\[1\]</a>', page)
    assert re.search(r'<a [^>]*href="/passages/\d+#chunk-\d+"[^>]*>\[2\]</a>', page)
    for chunk in cited:
        passage = _page(asking, f"/passages/{chunk}")
        assert re.search(rf'<li[^>]*class="chunk cited"[^>]*id="chunk-{chunk}"', passage)
        assert "general/TargetDown.md" in passage and "<h1>TargetDown</h1>" in passage


def test_an_abstention_page_lists_related_documents_not_an_answer(asking: Web) -> None:
    page = _asked_page(asking, BREAD)
    assert html.escape(ABSTENTION_TEXT, quote=False) in page or ABSTENTION_TEXT in html.unescape(
        page
    )
    assert "Related, not an answer" in page
    assert re.search(r'id="related".*?href="/passages/\d+', page, re.S)
    assert 'id="citations"' not in page


def test_a_bad_or_missing_passage_is_the_html_error_page(asking: Web) -> None:
    for path, status in (("/passages/999999999", 404), ("/passages/abc", 422), ("/passages/-1", 422),
                         ("/passages/99999999999999999999", 422)):  # fmt: skip
        response = asking.client.get(
            path, headers={**HTML, **asking.api(asking.world.approver_token)}
        )
        assert response.status_code == status, (path, response.text)
        assert response.headers["content-type"].startswith("text/html"), path


def test_document_text_renders_inert_on_the_answer_and_passage_pages(asking: Web) -> None:
    answer = _ask(asking, XSS_QUESTION).json()
    assert answer["citations"][0]["path"] == "general/ReactorOverheating.md", answer
    page = _asked_page(asking, XSS_QUESTION)
    passage = _page(asking, answer["citations"][0]["link"].split("#")[0])
    for shown in (page, passage):
        assert [p for p in active_parts(shown) if p != "form"] == []
        assert "&lt;script&gt;window.__xss=3&lt;/script&gt;" in shown
        assert 'href="https://evil.example' not in shown  # the misleading link is text
        # A tag's attribute, not the text of a tag the passage page shows as written.
        assert not re.search(r'<[^>]*\b(href|src|action)="\s*javascript:', shown, re.I)
        assert not re.search(r'<a [^>]*id="document-url"', shown)  # javascript: is no link
    forms = re.findall(r'<form[^>]*action="([^"]+)"', page)
    assert set(forms) <= {"/ask", "/ask/issue", "/logout"}


def test_the_ask_form_needs_the_csrf_token(signed_web: Web) -> None:  # noqa: F811
    csrf = sign_in(signed_web, "alex")
    refused = signed_web.client.post("/ask", data={"question": ALERT}, headers=HTML)
    assert refused.status_code == 403
    page = signed_web.client.get("/ask", headers=HTML).text
    assert f'name="csrf_token" value="{csrf}"' in page
    ok = signed_web.client.post("/ask", data={"question": BREAD, "csrf_token": csrf}, headers=HTML)
    assert ok.status_code == 200 and "Related, not an answer" in ok.text


# --- an issue from an answer ---------------------------------------------------------------


def _hidden(page: str, name: str) -> str:
    match = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)"', page)
    assert match, name
    return html.unescape(match.group(1))


def test_open_an_issue_from_an_answer_makes_a_proposal_waiting_in_the_inbox(asking: Web) -> None:
    rita = asking.world.requester_token
    page = _asked_page(asking, ALERT, rita)
    assert "Open an issue from this answer" in page
    title, body = _hidden(page, "title"), _hidden(page, "body")
    assert title.startswith("One or more targets are unreachable")
    assert re.search(
        r"\[1\] \[TargetDown § Diagnosis\]\(https://testserver/passages/\d+#chunk-\d+\)", body
    )
    form = asking.client.post(
        "/ask/issue", data={"title": title, "body": body}, headers={**HTML, **asking.api(rita)}
    )
    assert form.status_code == 200, form.text
    assert re.search(r'<option value="widgets"[^>]*>widgets', form.text)
    assert re.search(r'<label for="issue-title">', form.text)
    assert html.escape(title, quote=True) in form.text
    made = asking.client.post(
        "/ask/issue/create",
        data={"alias": "widgets", "title": title, "body": body, "labels": "question"},
        headers={**HTML, **asking.api(rita)},
        follow_redirects=False,
    )
    assert made.status_code == 303, made.text
    proposal_path = made.headers["location"]
    assert re.fullmatch(r"/proposals/[0-9a-f-]{36}", proposal_path)
    shown = _page(asking, proposal_path)  # the approver sees it, waiting for a decision
    assert "One or more targets are unreachable" in shown and 'id="approve"' in shown
    assert asking.fake.writes_received == 0  # nothing goes to GitHub before an approval


def test_an_issue_for_an_unknown_project_or_label_is_refused_on_a_page(asking: Web) -> None:
    rita = asking.api(asking.world.requester_token)
    for data, said in (
        ({"alias": "elsewhere", "title": "t", "body": "b"}, "unknown project alias"),
        ({"alias": "widgets", "title": "t", "body": "b", "labels": "secret"}, "is not allowed"),
        ({"alias": "widgets", "title": "", "body": "b"}, "title"),
    ):
        response = asking.client.post("/ask/issue/create", data=data, headers={**HTML, **rita})
        assert 400 <= response.status_code < 500, response.text
        assert response.headers["content-type"].startswith("text/html")
        assert said in html.unescape(response.text)


def test_with_a_model_each_call_counts_against_the_daily_budget_then_429(
    queue_ready: str, oauth_github: FakeGitHubWithOAuth, tmp_path: Path
) -> None:
    # A model that cites a passage it was not given: each question costs two calls (the retry),
    # then the abstention. The budget is two calls a day.
    script = tmp_path / "script.json"
    wrong = {"answer": "See [1].", "citations": [999_999_999], "confidence": 0.9}
    script.write_text(json.dumps([wrong] * 4))
    settings = web_settings(
        queue_ready,
        oauth_github.url,
        model_provider="scripted",
        scripted_model_file=script,
        model_daily_calls_per_principal=2,
        embedder="local",
    )
    with open_app(settings, auto_migrate=False) as app:
        world = make_world(app.db)
        admin.add_tenant(app.db, "evil")
        _index(app)
        with TestClient(create_app(app), base_url="https://testserver") as client:
            web = Web(app, world, oauth_github, client)
            first = _ask(web, ALERT)
            assert first.status_code == 200 and first.json()["abstained"] is True
            spent = _ask(web, ALERT)
            assert spent.status_code == 429
            assert "RESOLVEFLOW_MODEL_DAILY_CALLS_PER_PRINCIPAL" in spent.json()["message"]
            # No source: the abstention calls no model, so the spent budget does not matter.
            assert _ask(web, BREAD).status_code == 200
            # Another principal has a budget of their own.
            assert _ask(web, ALERT, world.requester_token).status_code == 200


def test_overlapping_chunks_show_their_overlap_once_and_the_cited_one_whole() -> None:
    shared = "a sentence the chunker carried over into the next chunk."
    chunks = [(1, "head text. " + shared), (2, shared + "\n\nbody two."), (3, "body three.")]
    assert [(p.chunk_id, p.text, p.cited) for p in passages.parts(chunks, 3)] == [
        (1, "head text. " + shared, False),
        (2, "body two.", False),
        (3, "body three.", True),
    ]
    # Cited: the later chunk is whole, the earlier one gives up the overlap.
    assert [p.text for p in passages.parts(chunks, 2)] == [
        "head text.",
        shared + "\n\nbody two.",
        "body three.",
    ]
    assert passages.overlap("abc", "abcdef") == 0  # too short to be the chunker's overlap


def test_answers_and_quotes_render_as_markdown_with_the_addresses_of_links_shown(
    asking: Web,
) -> None:
    page = _asked_page(asking, ALERT)
    answer = page[page.index('id="answer-text"') : page.index('id="citations"')]
    assert "<code>up == 0</code>" in answer and "`up == 0`" not in answer
    quotes = page[page.index('id="citations"') :]
    assert "<code>up == 0</code>" in quotes
    # A link in a document is shown as its words and its real address, never followed blindly.
    xss = _asked_page(asking, XSS_QUESTION)
    assert '<code class="address">https://evil.example/steal</code>' in xss
