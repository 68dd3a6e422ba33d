"""A triage result's parts joined to a branch's action (pure): kept parts add their labels once
and their paragraphs before the comment's closing line (or make the comment); a left-out part
adds nothing but a note saying why; the record keeps every part with its score and floor."""

from __future__ import annotations

from resolveflow.triage.domain.parts import (
    SIGNATURE,
    Part,
    PartItem,
    PartName,
    TriageParts,
    left_out,
    missing_facts_part,
)
from resolveflow.triage.domain.rules import ProposedAction

LABEL = Part(PartName.LABELS, 0.8, 0.35, (PartItem("bug", 0.8, "learned"),))
FACTS = missing_facts_part("It crashes", "It crashes.", "NONE")


def test_kept_parts_join_a_branch_without_a_comment() -> None:
    joined = TriageParts((LABEL, FACTS)).joined(ProposedAction(None, ("needs-triage",), ()))
    assert joined.labels == ("needs-triage", "bug")
    assert joined.comment is not None
    assert joined.comment.startswith("Thanks for the report.\n\nTo look into this")
    assert joined.comment.endswith(SIGNATURE)


def test_paragraphs_go_before_a_comment_s_closing_line_and_labels_are_not_repeated() -> None:
    ci = "Two checks fail.\n\nDrafted by ResolveFlow from the check results and approved."
    joined = TriageParts((LABEL, FACTS)).joined(ProposedAction(ci, ("bug",), ()))
    assert joined.labels == ("bug",)
    blocks = joined.comment.split("\n\n") if joined.comment else []
    assert blocks[0] == "Two checks fail." and blocks[-1].startswith("Drafted by ResolveFlow")
    assert blocks[1].startswith("To look into this")


def test_a_left_out_part_adds_nothing_and_is_counted() -> None:
    below = left_out(PartName.LABELS, "the likeliest label, bug, is below its floor", 0.2, 0.35)
    quiet = missing_facts_part("Add a CSV export", "It would be nice.", "NONE")
    parts = TriageParts((below, quiet))
    joined = parts.joined(ProposedAction(None, (), ("a note",)))
    assert (joined.comment, joined.labels) == (None, ())
    assert joined.notes == ("a note",)  # no noise in the inbox: the record says why
    assert parts.left_out_count == 2 and parts.kept == ()
    assert parts.as_json()[0] == {
        "name": "labels",
        "score": 0.2,
        "floor": 0.35,
        "kept": False,
        "left_out": "the likeliest label, bug, is below its floor",
        "items": [],
    }


def test_the_repository_s_own_people_and_complete_reports_are_not_asked() -> None:
    assert missing_facts_part("It crashes", "It crashes.", "OWNER").left_out
    given = missing_facts_part(
        "It crashes",
        "It crashes on 2.1 under Linux.\n```\nrun()\n```\nKeyError: 'x'",
        "NONE",
    )
    assert given.left_out == "the report gives 4 of the 4 facts asked for"


def test_a_title_s_code_names_become_code_spans_and_the_rest_stays_inert() -> None:
    from resolveflow.domain.inert_markdown import inert_title

    title = "Flaky `x` test_render_timeout <img src=x> @team [a](b) __init__"
    shown = inert_title(title, 120)
    assert "`test_render_timeout`" in shown
    assert "&#96;x&#96;" in shown  # a backtick of the title never opens a code span
    for raw in ("<img", "@team", "[a]", "](b)", "__init__"):
        assert raw not in shown


def test_a_part_under_the_floor_its_repository_s_decisions_set_is_left_out_and_says_so() -> None:
    from resolveflow.triage.domain.parts import Part, PartItem, PartName, TriageParts

    related = Part(PartName.RELATED, 0.42, 0.15, (PartItem("13", 0.42),), "Earlier reports")
    labels = Part(PartName.LABELS, 0.9, 0.35, (PartItem("bug", 0.9),))
    raised = TriageParts((related, labels)).under(
        {
            PartName.RELATED: (0.5, "fitted from 40 decisions"),
            PartName.LABELS: (0.6, "fitted from 30 decisions"),
        }
    )
    [held, kept] = raised.parts
    assert not held.kept and held.floor == 0.5 and held.score == 0.42
    assert "decisions set (0.50: fitted from 40 decisions)" in (held.left_out or "")
    assert kept.kept and kept.floor == 0.6  # above it: kept, carrying the raised floor
    # a floor the decisions set lower than the part's own changes nothing
    same = TriageParts((related,)).under({PartName.RELATED: (0.1, "fitted")})
    assert same.parts == (related,)
