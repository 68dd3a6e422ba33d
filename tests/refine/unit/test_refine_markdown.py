"""The Markdown enrichment: every part rendered, and ticket-derived text made inert."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from resolveflow.domain.inert_markdown import backtick_run, code, inert
from resolveflow.refine.domain.document import (
    ChangedFile,
    Facts,
    FixCommit,
    Judgement,
    RefineDocument,
    RelatedPage,
    RelatedTask,
    Relevance,
    RunbookAttachment,
    StepWarning,
    SuggestedFile,
    Summary,
    Ticket,
    TicketSource,
)
from resolveflow.refine.domain.markdown import MAX_MARKDOWN_CHARS, render_markdown

EVIL = "Crash [x](http://evil) <img src=x> @org/team ![p](http://evil/p.png) ``` `rm -rf`"


def _document(title: str = EVIL) -> RefineDocument:
    doc = RefineDocument(ticket=Ticket(source=TicketSource.TEXT, title=title, body="b"))
    doc.related = [
        RelatedTask(source="github:acme/w", external_id="41", kind="issue",
                    title="Export crashes @alice <script>", url="https://github.com/acme/w/issues/41",
                    score=0.7, cosine=0.8),
        RelatedTask(source="github:acme/w", external_id="17", kind="issue", title="Other",
                    url="javascript:alert(1)", score=0.2, cosine=0.3),
    ]  # fmt: skip
    doc.judgements = [
        Judgement(
            external_id="41", relevance=Relevance.HIGH, reason="shares: csv.py, [y](http://e)"
        ),
        Judgement(external_id="17", relevance=Relevance.LOW, reason="nothing rare in common"),
    ]
    doc.summary = Summary(
        task=f"{title}. The export fails.",
        split_required=True,
        frontend_scope=["web/export/Button.tsx"],
        backend_scope=["server/export_csv.py"],
        facts=Facts(versions=["widgets 2.3.1"], errors=["ValueError: bad ``` value @bob"],
                    stack_frames=["widgets/export/csv.py:88 in write_row"],
                    file_paths=["widgets/export/csv.py"]),
    )  # fmt: skip
    doc.runbook = RunbookAttachment(tag="export", title="Export failures", path="runbooks/export.md",
                                    why="label runbook:export on #41 (high)",
                                    checklist="1. Check the **input** file\n2. Re-run the export")  # fmt: skip
    doc.changes = [FixCommit(task="41", repository="acme/w", sha="0123456789abcdef" * 2 + "01234567",
                             committed_at=datetime(2024, 3, 3, tzinfo=UTC),
                             subject="Fix n/a in CSV <b>export</b> (#42)", how="squash (#PR)",
                             files=[ChangedFile(path="widgets/export/csv.py", added=4, removed=1),
                                    ChangedFile(path="logo.png")])]  # fmt: skip
    doc.suggested_files = [SuggestedFile(path="widgets/export/csv.py", repository="acme/w", score=0.83,
                                         commits=["0123456789abcdef" * 2 + "01234567"],
                                         reasons=["traceback frame", "changed by #41's fix"])]  # fmt: skip
    doc.warnings = [StepWarning(step="changes", message="task 17: commits unreadable @x")]  # type: ignore[arg-type]
    return doc


def test_every_part_is_rendered() -> None:
    markdown = render_markdown(_document("CSV export fails"))
    for expected in (
        "CSV export fails. The export fails.",
        "`widgets 2.3.1`",
        "`widgets/export/csv.py:88 in write_row`",
        "Frontend: `web/export/Button.tsx`",
        "Backend: `server/export_csv.py`",
        "split",
        "**high** [#41](https://github.com/acme/w/issues/41)",
        "**low** #17",  # an unsafe URL is not linked
        "Export failures",
        "label runbook:export on &#35;41 (high)",
        "> 1. Check the **input** file\n> 2. Re-run the export",  # trusted: quoted as is
        "`0123456` 2024-03-03",
        "`widgets/export/csv.py` +4 −1",
        "`logo.png` (binary)",
        "`widgets/export/csv.py` (acme/w) score 0.83",
        "traceback frame",
        "changes: task 17: commits unreadable",
    ):
        assert expected in markdown, expected


def _outside_code(markdown: str) -> str:
    """The text outside code spans (where Markdown is interpreted)."""
    return re.sub(r"(`+)(?:(?!\1).)*?\1", "", markdown)


def test_ticket_text_cannot_inject_links_images_html_mentions_or_fences() -> None:
    markdown = render_markdown(_document())
    live = _outside_code(markdown)
    assert "](http" not in live.replace("](https://github.com/acme/w/issues/41)", "")
    assert "<img" not in live and "<script" not in live and "<b>" not in live
    assert not re.search(r"@[A-Za-z]", markdown)  # no mention anywhere, in code or not
    assert "http://evil" not in live  # not even a bare URL GitHub would autolink
    assert "javascript:" not in markdown
    assert not re.search(r"^\s*```", markdown, re.MULTILINE)  # no line opens or closes a fence


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a [x](http://evil) b", "a &#91;x&#93;(http[:]//evil) b"),
        ("<img src=x>", "&#60;img src=x&#62;"),
        ("ping @org/team", "ping @\u200dorg/team"),
        ("two\nlines", "two lines"),
        (
            "**bold** _it_ #1 |t| ~s~ !x \\",
            "&#42;&#42;bold&#42;&#42; &#95;it&#95; &#35;1 &#124;t&#124; &#126;s&#126; &#33;x &#92;",
        ),
        ("&lt;b&gt;", "&#38;lt;b&#38;gt;"),
    ],
)
def test_inert(text: str, expected: str) -> None:
    assert inert(text, 200) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a.py", "`a.py`"),
        ("x ` y", "`` x ` y ``"),
        ("```", "```` ``` ````"),
        ("to @team", "`to @\u200dteam`"),
    ],
)
def test_code_spans_hold_any_backticks(text: str, expected: str) -> None:
    assert code(text) == expected


@pytest.mark.parametrize(
    ("text", "run"),
    [("", 0), ("no ticks", 0), ("`", 1), ("a ``` b ` c", 3), ("``x`````\n`", 5)],
)
def test_the_longest_backtick_run_sizes_spans_and_fences(text: str, run: int) -> None:
    assert backtick_run(text) == run


def test_the_enrichment_is_bounded_and_says_so() -> None:
    doc = _document("t")
    doc.warnings = [StepWarning(step="changes", message=f"w{i} " + "x" * 150) for i in range(900)]  # type: ignore[arg-type]
    markdown = render_markdown(doc)
    assert len(markdown) <= MAX_MARKDOWN_CHARS
    assert markdown.endswith("(cut)")


def test_an_empty_document_renders() -> None:
    doc = RefineDocument(ticket=Ticket(source=TicketSource.TEXT, title="Only a title"))
    markdown = render_markdown(doc)
    assert "Only a title" in markdown and "No similar past task" in markdown


def _commit(task: str, sha: str, excerpt: str = "") -> FixCommit:
    return FixCommit(task=task, repository="acme/w", sha=sha * 40, subject=f"fix {task}",
                     committed_at=datetime(2024, 3, 3, tzinfo=UTC), how="squash (#PR)",
                     files=[ChangedFile(path=f"f{task}.py", added=1, removed=0)],
                     excerpt=excerpt)  # fmt: skip


def test_commits_of_the_shown_tasks_and_behind_the_suggestions_with_fenced_excerpts() -> None:
    doc = _document("CSV export fails")
    diff = "@@ -1 +1 @@\n-x = 1\n+x = '```' @carol"  # a fence and a mention inside the diff
    doc.changes = [
        _commit("41", "a", diff),  # a task shown (judged)
        _commit("99", "b"),  # another similar task: voted, behind no suggestion
        _commit("98", "c"),  # another similar task, behind a suggested file
    ]
    doc.suggested_files[0].commits = ["c" * 40]
    markdown = render_markdown(doc)
    assert "fix 41" in markdown and "fix 98" in markdown and "fix 99" not in markdown
    assert "and 1 more commits of other similar tasks (in the JSON document)" in markdown
    assert "  ````diff\n  @@ -1 +1 @@\n  -x = 1\n  +x = '```' @carol\n  ````" in markdown
    assert markdown.index("fix 41") < markdown.index("````diff") < markdown.index("fix 98")


@pytest.mark.parametrize(
    ("diff", "fence"),
    [("-a\n+b", "```"), ("+x = '`'", "```"), ("+s = '`````'\n+t = '``'", "``````")],
)
def test_an_excerpt_fence_is_three_ticks_or_one_longer_than_any_run_inside(
    diff: str, fence: str
) -> None:
    doc = _document("CSV export fails")
    doc.changes = [_commit("41", "a", diff)]
    indented = "\n".join(f"  {line}" for line in diff.split("\n"))
    assert f"\n  {fence}diff\n{indented}\n  {fence}\n" in render_markdown(doc)


# --- related pages, and diffs only for high relevance ---------------------------------------------


def _page(eid: str, title: str, url: str | None = None) -> RelatedPage:
    return RelatedPage(source="docs", external_id=eid, kind="doc", title=title, url=url,
                       score=0.6, cosine=0.5)  # fmt: skip


def _section(markdown: str, heading: str) -> str:
    start = markdown.index(f"### {heading}\n")
    end = markdown.find("\n### ", start + 1)
    return markdown[start : end if end >= 0 else len(markdown)]


def test_pages_have_their_own_section_and_only_the_relevant_ones_are_listed() -> None:
    doc = _document("CSV export fails")
    doc.pages = [
        _page("guide/export.md", "Exporting to CSV", "https://docs.example.test/export"),
        _page("npm/install.md", "Installing with npm"),
        _page("guide/sheets.md", "Sheets"),
    ]
    doc.page_judgements = [
        Judgement(external_id="guide/export.md", relevance=Relevance.HIGH, reason="shares: csv.py"),
        Judgement(
            external_id="npm/install.md",
            relevance=Relevance.MEDIUM,
            reason="nothing rare in common",
        ),
        Judgement(external_id="guide/sheets.md", relevance=Relevance.LOW, reason="x"),
    ]
    markdown = render_markdown(doc)
    pages = _section(markdown, "Related pages")
    assert "[Exporting to CSV (`guide/export.md`)](https://docs.example.test/export)" in pages
    assert "**high**" in pages and "npm" not in markdown and "Sheets" not in markdown
    assert "and 2 more pages judged below high (in the JSON document)" in pages
    tasks = _section(markdown, "Related tasks")
    assert "#41" in tasks and "Exporting to CSV" not in tasks
    doc.page_judgements[0].relevance = Relevance.MEDIUM
    pages = _section(render_markdown(doc), "Related pages")
    assert "No page was judged high enough to list (3 found)." in pages and "**" not in pages
    doc.pages, doc.page_judgements = [], []
    assert "No page of the index was found." in render_markdown(doc)


def test_only_a_high_tasks_fix_shows_files_and_diff_the_others_are_a_link() -> None:
    doc = _document("CSV export fails")
    doc.judgements.append(Judgement(external_id="5", relevance=Relevance.MEDIUM, reason="r"))
    doc.related.append(RelatedTask(source="github:acme/w", external_id="5", kind="issue",
                                   title="T", url="https://github.com/acme/w/issues/5",
                                   score=0.5, cosine=0.5))  # fmt: skip
    doc.changes = [
        _commit("41", "a", "+high diff line"),
        _commit("5", "b", "+medium diff line"),  # an excerpt it should not have: not shown
        _commit("17", "c", "+low diff line"),
    ]
    changes = _section(render_markdown(doc), "Changes that solved the related tasks")
    assert "+high diff line" in changes and "`f41.py` +1 −0" in changes
    assert "diff line" not in changes.replace("+high diff line", "")
    assert "f5.py" not in changes and "f17.py" not in changes
    assert (
        "`bbbbbbb` 2024-03-03 fix 5 (fixed [#5](https://github.com/acme/w/issues/5), medium,"
        in changes
    )
    assert "`ccccccc` 2024-03-03 fix 17 (fixed #17, low, found by" in changes  # unsafe URL: none
