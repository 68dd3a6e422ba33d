"""Issue 11, finding 9: what a rendering hides from the approver, found in the texts themselves.

Each kind is found, plain Markdown raises nothing, the tricks that move a comment out of a code
block's reach are caught, and a differential run against markdown-it (the renderer the pages
use, CommonMark as GitHub is) shows no hidden comment the scan misses.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from resolveflow.gate.domain.actions import build_action, build_issue_create
from resolveflow.gate.domain.disclosure import (
    BIDI_CONTROLS,
    Finding,
    Hidden,
    revealed,
    scan_action,
    scan_markdown,
    scan_plain,
)
from resolveflow.gate.domain.disclosure.kinds import EXCERPT_CHARS, MAX_PER_KIND


def kinds(text: str) -> list[Hidden]:
    return [finding.kind for finding in scan_markdown(text, "comment")]


def only(text: str, kind: Hidden) -> Finding:
    found = scan_markdown(text, "comment")
    assert [f.kind for f in found] == [kind], found
    return found[0]


PLAIN = """## What happened

Thanks for the report! This looks like the **fsspec** pin again (see #5270 and
[the release notes](https://github.com/acme/widgets/releases/tag/v2.1.0)).

1. Upgrade: `pip install -U widgets`
2. Check [README.md](https://github.com/acme/widgets/blob/main/README.md) and
   [setup.py](https://github.com/acme/widgets/blob/main/setup.py).
3. Read [https://example.com/docs](https://example.com/docs/) or [example.com](https://www.example.com/).

- [x] reproduced
- [ ] fixed

> Quoting the log:
> `ValueError: bad widget`

| option | default |
|---|---|
| `size` | 4096 |

```html
<!-- a comment in a code block is shown as text -->
<details><summary>also text</summary></details>
<img src="https://example.com/x.png">
```

~~~
[https://good.example](https://evil.example)
~~~

<details open><summary>Full log</summary>

Everything is visible.
</details>

Autolinks <https://example.com/a> and https://example.com/b, mail <me@example.com>,
[mail me](mailto:me@example.com), an [anchor](#what-happened) and a [relative](../docs/x.md) link.
Emoji: 👩‍💻 ❤️ 1️⃣ 🏴󠁧󠁢󠁳󠁣󠁴󠁿, Persian: می‌خواهم, Hindi: क्‍ष.
"""


def test_plain_markdown_raises_nothing() -> None:
    assert scan_markdown(PLAIN, "comment") == []


@pytest.mark.parametrize(
    ("text", "kind", "excerpt"),
    [
        ("Thanks!\n\n<!-- approve this -->\n\nBye", Hidden.HTML_COMMENT, "<!-- approve this -->"),
        ("Thanks <!-- inline --> for it", Hidden.HTML_COMMENT, "<!-- inline -->"),
        ("<!--\nmany\n\nlines\n-->", Hidden.HTML_COMMENT, "<!-- many lines -->"),
        ("text\n\n<!-- never closed\n\nhides the rest", Hidden.HTML_COMMENT, "never closed"),
        ("a <?php hidden ?> b", Hidden.HTML_COMMENT, "<?php hidden ?>"),
        ("a <![CDATA[ hidden ]]> b", Hidden.HTML_COMMENT, "CDATA"),
        ("a <!DOCTYPE hidden> b", Hidden.HTML_COMMENT, "<!DOCTYPE hidden>"),
        (
            "<details><summary>Logs</summary>\n\nrun `rm -rf ~`\n</details>",
            Hidden.COLLAPSED_DETAILS,
            "Logs",
        ),
        ("<DETAILS title='open'>x</DETAILS>", Hidden.COLLAPSED_DETAILS, "x"),
        ("<script>steal()</script>", Hidden.DROPPED_HTML, "<script>steal()</script>"),
        ("a <style>.x{}</style> b", Hidden.DROPPED_HTML, "<style>"),
        ("<svg><text>hidden</text></svg>", Hidden.DROPPED_HTML, "<svg>"),
        ("[//]: # (a hidden note)\n\nVisible", Hidden.UNUSED_REFERENCE, "[//]: # (a hidden note)"),
        ("![chart](https://tracker.example/p.gif?id=7)", Hidden.IMAGE, "tracker.example/p.gif"),
        ('<img src="https://tracker.example/p.gif">', Hidden.IMAGE, "tracker.example"),
        ("![x][pic]\n\n[pic]: https://tracker.example/q.png", Hidden.IMAGE, "q.png"),
        ("abc\u202edcba", Hidden.BIDI_CONTROL, "abc⟨U+202E⟩dcba"),
        ("pay\u200bpal", Hidden.INVISIBLE_CHARACTER, "pay⟨U+200B⟩pal"),
        ("tag \U000e0069\U000e0067", Hidden.INVISIBLE_CHARACTER, "⟨U+E0069⟩"),
    ],
)
def test_each_kind_is_found_with_an_excerpt(text: str, kind: Hidden, excerpt: str) -> None:
    found = [f for f in scan_markdown(text, "comment") if f.kind is kind]
    assert found and excerpt in found[0].excerpt, scan_markdown(text, "comment")
    assert found[0].field == "comment" and len(found[0].excerpt) <= EXCERPT_CHARS
    assert kind.explanation


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("[https://github.com/acme](https://evil.example/x)", "https://github.com/acme"),
        ("[paypal.com](https://evil.io/login)", "paypal.com"),
        ("[www.github.com](https://evil.example)", "www.github.com"),
        ('<a href="https://evil.io">https://github.com</a>', "https://github.com"),
        ("<a data-href='https://github.com' href='https://evil.io'>github.com</a>", "github.com"),
        ("[https://github.com](https://github.com@evil.io/)", "https://github.com"),
        ("[https://github.com/a/b/issues/1](https://github.com/a/b/issues/2)", "issues/1"),
        ("[github.com](/local/path)", "github.com"),
        ("[alice@example.com](mailto:bob@evil.example)", "alice@example.com"),
        ("[paypal&#46;com](https://evil.io)", "paypal.com"),
        ("[**github.com**](https://evil.io)", "github.com"),
        ("[https://github.com][ref]\n\n[ref]: https://evil.io", "https://github.com"),
        ("[github.com]\n\n[github.com]: https://evil.io", "github.com"),
    ],
)
def test_a_link_that_shows_another_address_than_its_target(text: str, shown: str) -> None:
    assert shown in only(text, Hidden.MISLEADING_LINK).excerpt


@pytest.mark.parametrize(
    "text",
    [
        "[https://github.com/acme/](https://github.com/acme)",  # a trailing slash
        "[http://example.com/a](https://example.com/a#top)",  # scheme, fragment
        "[EXAMPLE.com/Docs](https://www.example.com/Docs)",
        "[the docs](https://evil.io)",  # the text names no address
        "[v1.2.3](https://github.com/acme/widgets/releases)",
        "[config.yaml](https://github.com/acme/widgets/blob/main/config.yaml)",
        "[https://example.com/a b](https://example.com/a%20b)",
        "[![badge](https://img.shields.io/x.svg)](https://ci.example)",  # an image for text
    ],
)
def test_links_whose_text_matches_their_target_are_not_reported(text: str) -> None:
    assert Hidden.MISLEADING_LINK not in kinds(text)


CODE_CASES = {
    "fenced with backticks": "```html\n<!-- in code -->\n```",
    "fenced with tildes": "~~~\n<!-- in code -->\n~~~",
    "fenced in a list item": "- step\n\n  ```\n  <!-- in code -->\n  ```",
    "a fence never closed": "text\n\n```\n<!-- in code to the end -->",
    "escaped": "\\<!-- shown as text -->",
}


@pytest.mark.parametrize("text", CODE_CASES.values(), ids=CODE_CASES.keys())
def test_a_comment_shown_as_code_or_text_is_not_reported(text: str) -> None:
    assert Hidden.HTML_COMMENT not in kinds(text)


def test_a_comment_in_inline_code_is_reported_by_choice() -> None:
    """Where an inline span starts depends on the whole inline grammar; guessing wrong would
    hide a real comment, so a comment in inline code is reported (docs/web.md says so)."""
    assert kinds("use `<!-- x -->` to comment") == [Hidden.HTML_COMMENT]


TRICKS = {
    # Each is a real HTML comment for CommonMark, next to something that looks like code.
    "an indented line that looks like a fence": "    ```\n<!-- hidden -->\n```\n",
    "a fence inside an HTML block": "<div>\n```\n<!-- hidden -->\n```\n</div>",
    "a list item that ends before its fence does": "- a\n  ```\n<!-- hidden -->\n  ```",
    "a fence inside HTML inside a list item": "- <div>\n  ```\n  <!-- hidden -->\n  ```",
    "escaped backticks around it": "\\`<!-- hidden -->\\`",
    "a backtick taken by an HTML attribute": '<a title="`">x</a> <!-- hidden --> `',
    "a backtick taken by a link destination": "[a](x`) <!-- hidden --> `",
    "a table cell ending a code span": "| a | b |\n|---|---|\n| `a | <!-- hidden --> | b` |",
    "a fence whose info string has a backtick": "```a`\n<!-- hidden -->\n```",
    "a quoted fence line missing its marker": "> ```\n<!-- hidden -->\n```",
}


@pytest.mark.parametrize("text", TRICKS.values(), ids=TRICKS.keys())
def test_tricks_that_hide_a_comment_next_to_code_are_caught(text: str) -> None:
    assert Hidden.HTML_COMMENT in kinds(text)
    assert "<!--" in _MARKDOWN_IT.render(text)  # and the renderer does treat it as HTML


@pytest.mark.parametrize("control", sorted(BIDI_CONTROLS))
def test_every_bidirectional_control_is_reported(control: str) -> None:
    assert [f.kind for f in scan_plain(f"a{control}b", "title")] == [Hidden.BIDI_CONTROL]


@pytest.mark.parametrize(
    "char", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\u3164", "\x1b"]
)
def test_invisible_characters_between_ascii_letters_are_reported(char: str) -> None:
    found = scan_plain(f"bug{char}fix", "labels")
    assert [f.kind for f in found] == [Hidden.INVISIBLE_CHARACTER]
    assert found[0].excerpt == f"bug⟨U+{ord(char):04X}⟩fix"


def test_revealed_marks_each_hidden_character() -> None:
    assert revealed("a\u202eb\u200bc") == [
        ("a", False),
        ("\u202e", True),
        ("b", False),
        ("\u200b", True),
        ("c", False),
    ]
    assert revealed("👩\u200d💻") == [("👩\u200d💻", False)]
    assert revealed("") == []


def test_an_action_is_scanned_field_by_field() -> None:
    comment = build_action("acme/widgets", 1, "ok <!-- hidden -->", ["bug\u200b"])
    assert [(f.kind, f.field) for f in scan_action(comment)] == [
        (Hidden.HTML_COMMENT, "comment"),
        (Hidden.INVISIBLE_CHARACTER, "labels"),
    ]
    issue = build_issue_create(
        "acme/widgets", "Fix \u202eevil", "<details><summary>s</summary>x</details>", [], []
    )
    assert [(f.kind, f.field) for f in scan_action(issue)] == [
        (Hidden.BIDI_CONTROL, "title"),
        (Hidden.COLLAPSED_DETAILS, "body"),
    ]
    # A title is plain text on GitHub: markup in it is shown, not hidden.
    plain = build_issue_create("acme/widgets", "<!-- shown as text -->", "body", [], [])
    assert scan_action(plain) == ()
    assert scan_action(build_action("acme/widgets", 1, None, ["bug"])) == ()


def test_findings_are_bounded_per_kind_and_field() -> None:
    found = scan_markdown("<!-- x -->\n" * 1000 + "\u200b" * 1000, "body")
    assert [f.kind for f in found].count(Hidden.HTML_COMMENT) == MAX_PER_KIND
    assert [f.kind for f in found].count(Hidden.INVISIBLE_CHARACTER) == MAX_PER_KIND


HOSTILE = {
    "brackets": "[" * 65_000,
    "nested brackets": "[" * 32_500 + "]" * 32_500,
    "unclosed tags": "<a b" * 16_000,
    "unclosed comments": "<!--" * 16_000,
    "details": "<details><summary>" * 3_600,
    "backtick runs": "` `` " * 13_000,
    "lines": "\n" * 65_000,
    "images": "![x](" * 13_000,
    "invisible": "\u200b" * 65_000,
    "references": "[a][b] " * 9_000 + "\n[b]: x",
}


def test_hostile_texts_of_the_largest_size_are_scanned_quickly() -> None:
    started = time.perf_counter()
    for text in HOSTILE.values():
        scan_markdown(text, "comment")
        revealed(text)
    assert time.perf_counter() - started < 10  # about 2 s on the 2-core machine


_MARKDOWN_IT = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_PIECES = [
    "```", "~~~", "````", "    ", "  ", " ", "\t", "\n", "\n\n", "\n    ", "x", "#", "- ", "* ",
    "1. ", "> ", "|", "---", "===", "\n| a |\n|---|\n", "`", "``", "\\", "<!-- c -->", "<!--",
    "-->", "<!---->", "<!-->", "<!-- x\n\ny -->", "`<!--`", "<div>", "</div>", "<div\n", "<span>",
    "<pre>", "</pre>", "<pre>\n", "<table>", "<script>", "</script>", "<style>", "<details>",
    "<?", "?>", "<!X", ">", "[a](b)", "](x`", "](<x`>)", "](", ")", '"t`"', "[d]: x", "[x]: <a>",
    "<a href='x'>", "</a>", "<https://a.b>", "| `a | b` |", "|---|---|\n",
]  # fmt: skip


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=14))
# An indented "<pre>" is code; the "</pre>" after it opens an HTML block the fence stays in.
@example(["\n    ", "<pre>\n", "</pre>", "\n", "```", "<?"])
def test_no_comment_the_renderer_keeps_as_html_is_missed(pieces: list[str]) -> None:
    """Differential: markdown-it passes raw HTML through and escapes code, so a raw ``<!--``
    (or ``<?``, ``<!X``) in its output is markup hidden from the reader."""
    text = "".join(pieces)
    try:
        html = _MARKDOWN_IT.render(text)
    except IndexError:  # markdown-it 4.3 fails on a few inputs; web/markdown.py copes
        assume(False)
        return
    if "<!--" in html or "<?" in html or "<!X" in html:
        assert Hidden.HTML_COMMENT in kinds(text), text
