"""Everything posted goes through one inert-markdown function and one safe-URL check
(``domain/inert_markdown.py``): the triage comment, the investigation's, refine's enrichment and
Ask's prefilled issue escape the same characters the same way, and link only what one check
lets through. Before, triage escaped ``@`` but not ``~ & !`` and left URLs live, refine the
reverse, and three URL checks differed (a backtick passed two of them)."""

from __future__ import annotations

import pytest

from resolveflow.domain.inert_markdown import ZWJ, inert, inert_title, link, safe_url
from resolveflow.refine.domain.markdown import link as refine_link
from resolveflow.triage.domain.diagnosis import Snippet
from resolveflow.triage.domain.evidence import normalize
from resolveflow.triage.domain.investigation import link as triage_link
from resolveflow.triage.domain.investigation import model_text, related_line
from resolveflow.triage.domain.rules import failing_checks_comment

HOSTILE = "ping @octo-team ~~gone~~ &lt;b&gt; ![x](https://evil.example/p.png) www.evil.example"


def _snippet(title: str) -> Snippet:
    return Snippet(
        id="S1",
        source="github:acme/widgets",
        external_id="7",
        kind="issue",
        title=title,
        text="",
        url="https://github.com/acme/widgets/issues/7",
        state="closed",
        labels=(),
        relevance=0.9,
    )


def _check_comment(name: str, url: str) -> str:
    raw = {
        "repository": "acme/widgets",
        "issue": {
            "number": 1, "title": "CI", "body": "", "state": "open", "author": "a",
            "author_association": "NONE", "labels": [], "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z", "closed_at": None, "is_pull_request": False,
            "url": "https://github.com/acme/widgets/issues/1",
        },
        "comments": [],
        "check_runs": [
            {"id": 1, "kind": "check_run", "name": name, "status": "completed",
             "conclusion": "failure", "url": url}
        ],
        "repository_labels": [],
    }  # fmt: skip
    return failing_checks_comment(normalize(raw))


def test_every_product_escapes_the_same_characters_the_same_way() -> None:
    expected = inert(HOSTILE, 200)
    assert f"@{ZWJ}octo-team" in expected  # nobody is pinged
    for raw in ("~~", "&lt;", "![", "https://", "www.evil"):
        assert raw not in expected
    # the triage model text, a related issue's title and a check's name: the same text
    assert model_text(HOSTILE, 200) == expected
    assert related_line(_snippet(HOSTILE), "acme/widgets").endswith(f": {expected}")
    assert f"- {expected}: check concluded" in _check_comment(HOSTILE, "javascript:alert(1)")


def test_a_title_s_code_names_are_code_and_the_rest_is_escaped_as_prose() -> None:
    shown = inert_title("load_dataset fails for @team ~x~", 120)
    assert shown == f"`load_dataset` fails for @{ZWJ}team &#126;x&#126;"


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "https://x.example/a`b",  # a backtick passed triage's two checks before
        "https://x.example/a]b",  # and a bracket the rules' check
        "https://x.example/a b",
        "https://x.example/(a)",
        "ftp://x.example/a",
        "",
        None,
    ],
)
def test_one_safe_url_check_for_every_link(url: str | None) -> None:
    assert safe_url(url) is None
    assert link("text", url) == "text"
    assert refine_link("text", url) == "text"
    assert triage_link(url, "7", "acme/widgets") == "7"
    if url:
        assert "](" not in _check_comment("lint", url)


def test_a_safe_url_is_linked_the_same_way_everywhere() -> None:
    url = "https://github.com/acme/widgets/issues/7"
    assert safe_url(url) == url
    assert link("#7", url) == refine_link("#7", url) == triage_link(url, "x", "acme/widgets")
    assert f"[lint]({url})" in _check_comment("lint", url)
