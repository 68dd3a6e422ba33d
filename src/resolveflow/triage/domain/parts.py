"""One triage result per issue, made of parts (pure): each part is one kind of help (labels, a
request for missing facts, related issues...), with its score, its floor, and whether it is kept.

A part below its floor, or one that found nothing, is left out and counted, never shown: users
forgive silence sooner than noise. What is kept joins the run's proposal, whatever the branch the
rules chose: its labels beside the branch's, its paragraph in the comment. The run's record keeps
every part, kept or not, with its score and floor, so the run page can show why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from resolveflow.domain.inert_markdown import inert, inert_title
from resolveflow.domain.vocabulary import SuggestionKind
from resolveflow.gate.domain.actions.intent import LabelNote
from resolveflow.gate.domain.parts import (
    GREETING,
    SIGNATURE,
    PartItemRecord,
    PartRecord,
    item_lines,
)
from resolveflow.triage.domain.diagnosis import Snippet, url_issue
from resolveflow.triage.domain.duplicate_signals import DuplicateCandidate
from resolveflow.triage.domain.evidence import IssueEvidence
from resolveflow.triage.domain.investigation import link, related_line
from resolveflow.triage.domain.label_notes import label_note
from resolveflow.triage.domain.missing_facts import (
    REQUEST_WORDS,
    MissingFact,
    read_facts,
    request_text,
)
from resolveflow.triage.domain.rules import ProposedAction


class PartName(StrEnum):
    """The parts of one triage result (live runs make labels and missing facts so far; the
    backtest measures every one)."""

    LABELS = "labels"
    RELATED = "related"
    DUPLICATE = "duplicate"
    FILES = "files"
    DOCS = "docs"
    MISSING_FACTS = "missing_facts"
    FAILING_CHECKS = "failing_checks"


# Parts shown to the team only (the inbox, the run page), never posted.
INTERNAL = frozenset({PartName.FILES})


@dataclass(frozen=True)
class PartItem:
    """One thing a part suggests: a label, a missing fact."""

    ref: str
    score: float | None = None
    why: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "score": self.score, "why": self.why}


@dataclass(frozen=True)
class EarlierFix:
    """A change that fixed a similar earlier issue (the likely files part's evidence): internal,
    shown on the run page and in ``backtest --items``, never posted."""

    issue: str  # the similar issue's id
    commits: tuple[str, ...]  # the fixing commits' shas
    pulls: tuple[str, ...]  # the pull requests they squash, when their subject says
    subject: str  # the first fixing commit's subject line

    def as_json(self) -> dict[str, Any]:
        return {
            "issue": self.issue,
            "commits": list(self.commits),
            "pulls": list(self.pulls),
            "subject": self.subject,
        }


@dataclass(frozen=True)
class Part:
    name: PartName
    score: float | None  # the part's own measure (a label's probability...); None: a rule's yes
    floor: float | None  # the score it must reach to be shown
    items: tuple[PartItem, ...] = ()
    paragraph: str | None = None  # Markdown for the public comment
    left_out: str | None = None  # why it is not shown; None: kept
    fixes: tuple[EarlierFix, ...] = ()  # the likely files': earlier fixes of similar issues
    # A duplicate in the same repository: the issue a close-as-duplicate may name.
    original: int | None = None

    @property
    def kept(self) -> bool:
        return self.left_out is None and bool(self.items)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(item.ref for item in self.items) if self.name is PartName.LABELS else ()

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "name": self.name.value,
            "score": self.score,
            "floor": self.floor,
            "kept": self.kept,
            "left_out": self.left_out,
            "items": [item.as_json() for item in self.items],
        }
        if self.fixes:
            shown["fixes"] = [fix.as_json() for fix in self.fixes]
        if self.original is not None:
            shown["original"] = self.original
        return shown


def related_paragraph(
    related: list[Snippet],
    evidence: IssueEvidence,
    shared: Mapping[str, tuple[str, ...]] | None = None,
) -> str:
    """Earlier reports that look related, linked, with how each was resolved and why it looks
    related: the title words it shares with this one (``shared``, by issue id), escaped."""
    lines = ["Earlier reports that look related:", ""]
    for snippet in related:
        line = related_line(snippet, evidence.repository)
        words = (shared or {}).get(snippet.external_id, ())
        if words:
            line += " (both mention " + ", ".join(inert_title(w, 40) for w in words) + ")"
        lines.append(line)
    return "\n".join(lines)


def duplicate_paragraph(candidate: DuplicateCandidate, evidence: IssueEvidence) -> str:
    """ "This looks like a duplicate of #N: why", linked and escaped as a related line is."""
    snippet = candidate.snippet
    original = _same_repository_issue(snippet, evidence)
    if snippet.url is None and original is not None:
        head = f"#{original}"  # GitHub links it in the issue's own repository
    else:
        head = link(snippet.url, f"{snippet.source}:{snippet.external_id}", evidence.repository)
    title = inert_title(snippet.title, 120)
    return f"This looks like a duplicate of {head} ({title}): {inert(candidate.why, 400)}."


def duplicate_part(
    candidate: DuplicateCandidate | None, evidence: IssueEvidence, floor: float
) -> Part:
    """The likely original, when its score clears ``floor``; below it, left out and counted."""
    if candidate is None:
        return left_out(PartName.DUPLICATE, "no earlier issue was found")
    if candidate.score < floor:
        why = f"the likeliest original, {candidate.snippet.external_id}, is below the floor"
        return left_out(PartName.DUPLICATE, why, candidate.score, floor)
    item = PartItem(candidate.snippet.external_id, candidate.score, candidate.why)
    paragraph = duplicate_paragraph(candidate, evidence)
    original = _same_repository_issue(candidate.snippet, evidence)
    return Part(PartName.DUPLICATE, candidate.score, floor, (item,), paragraph, original=original)


def _same_repository_issue(snippet: Snippet, evidence: IssueEvidence) -> int | None:
    """The candidate's number when it is an issue of the report's own repository (only such an
    original may be named by a close-as-duplicate)."""
    located = url_issue(snippet.url)
    if located is not None:
        same = located[0] == evidence.repository.lower()
        return located[1] if same and located[1] != evidence.number else None
    own = snippet.source.lower() == f"github:{evidence.repository.lower()}"
    number = snippet.external_id
    return int(number) if own and number.isdigit() and int(number) != evidence.number else None


def left_out(
    name: PartName, why: str, score: float | None = None, floor: float | None = None
) -> Part:
    return Part(name, score, floor, left_out=why)


@dataclass(frozen=True)
class CloseOffer:
    """Closing the run's issue as a duplicate of ``original`` after a grace period, offered on
    the run page beside the duplicate part: a maintainer creates the proposal in one click
    (``github.issue_close_duplicate``, which checks the issue, chains and circles then)."""

    issue: str  # owner/name#N
    original: int
    score: float | None

    def as_json(self) -> dict[str, Any]:
        return {"issue": self.issue, "original": self.original, "score": self.score}


@dataclass(frozen=True)
class TriageParts:
    parts: tuple[Part, ...] = ()

    @property
    def kept(self) -> tuple[Part, ...]:
        return tuple(part for part in self.parts if part.kept)

    @property
    def left_out_count(self) -> int:
        return sum(1 for part in self.parts if not part.kept)

    def as_json(self) -> list[dict[str, Any]]:
        return [part.as_json() for part in self.parts]

    def close_offer(self, repository: str, issue: int) -> CloseOffer | None:
        """The close-after-grace a kept duplicate part offers (same repository only)."""
        for part in self.kept:
            if part.name is PartName.DUPLICATE and part.original is not None:
                return CloseOffer(f"{repository}#{issue}", part.original, part.score)
        return None

    def records(self, kinds: Mapping[PartName, SuggestionKind]) -> tuple[PartRecord, ...]:
        """Each part as the gate stores it: its kind (what its decisions count as), public when
        it adds labels or a paragraph to the proposal, internal otherwise (likely files)."""
        return tuple(_record(part, kinds.get(part.name)) for part in self.parts)

    def under(self, floors: Mapping[PartName, tuple[float, str]]) -> TriageParts:
        """The parts held to the floors the repository's own decisions set (``floors``: a
        part's raised floor and how it was fitted): a kept part scored below its raised floor is
        left out, and says so; one above it carries the raised floor."""
        return TriageParts(tuple(_under(part, floors.get(part.name)) for part in self.parts))

    def without(self, name: PartName, why: str) -> TriageParts:
        """The parts with ``name`` left out (another step already shows it)."""
        return TriageParts(
            tuple(left_out(p.name, why) if p.name is name else p for p in self.parts)
        )

    def joined(
        self, action: ProposedAction, acceptance: Mapping[PartName, float] | None = None
    ) -> ProposedAction:
        """The branch's action with every kept part: labels added (once), each learned label
        with its rationale and confidence (``acceptance``: the measured acceptance of a part's
        score band, when known), paragraphs appended to the comment (or made the comment). A
        left-out part adds nothing, not even a note in the inbox: the run's record keeps why
        (``as_json``)."""
        learned = (label for part in self.kept for label in part.labels)
        labels = tuple(dict.fromkeys((*action.labels, *learned)))
        paragraphs = [p.paragraph for p in self.kept if p.paragraph]
        comment = action.comment
        if paragraphs:
            comment = _with_paragraphs(comment, paragraphs)
        notes = _label_notes(self.kept, action, acceptance or {})
        return replace(action, comment=comment, labels=labels, label_notes=notes)


def _label_notes(
    kept: tuple[Part, ...], action: ProposedAction, acceptance: Mapping[PartName, float]
) -> tuple[LabelNote, ...]:
    """A note per learned label the branch did not already propose (a rule's label has none)."""
    notes = {note.label: note for note in action.label_notes}
    for part in kept:
        for item in part.items if part.name is PartName.LABELS else ():
            if item.ref in action.labels or item.ref in notes:
                continue
            score = item.score if item.score is not None else part.score
            band = acceptance.get(part.name)
            notes[item.ref] = label_note(item.ref, item.why, score, part.floor, band)
    return tuple(notes.values())


def _record(part: Part, kind: SuggestionKind | None) -> PartRecord:
    lines = item_lines(part.paragraph, len(part.items))
    items = tuple(
        PartItemRecord(item.ref, item.score, item.why, line)
        for item, line in zip(part.items, lines, strict=True)
    )
    why = None if part.kept else (part.left_out or "it found nothing")
    public = part.name not in INTERNAL
    paragraph = part.paragraph if part.kept else None
    score, floor = _unit(part.score), _unit(part.floor)
    return PartRecord(part.name.value, kind, score, floor, why, public, paragraph, items)


def _unit(value: float | None) -> float | None:
    """A score as the table keeps it, on [0, 1] (every part's is; a stray one must not fail the
    run's proposal)."""
    return None if value is None else min(1.0, max(0.0, value))


def _under(part: Part, raised: tuple[float, str] | None) -> Part:
    if raised is None or not part.kept or part.score is None or part.floor is None:
        return part
    floor, why = raised
    if floor <= part.floor:
        return part
    if part.score < floor:
        said = f"below the floor this repository's decisions set ({floor:.2f}: {why})"
        return left_out(part.name, said, part.score, round(floor, 4))
    return replace(part, floor=round(floor, 4))


def _with_paragraphs(comment: str | None, paragraphs: list[str]) -> str:
    """The parts' paragraphs after the comment's own, before its closing line."""
    if comment is None:
        return "\n\n".join([GREETING, *paragraphs, SIGNATURE])
    blocks = comment.split("\n\n")
    if len(blocks) > 1 and blocks[-1].startswith("Drafted by ResolveFlow"):
        return "\n\n".join([*blocks[:-1], *paragraphs, blocks[-1]])
    return "\n\n".join([comment, *paragraphs])


# Who may be asked for the facts of a report: not the repository's own people, who file issues
# for each other and whose reports a maintainer reads with the context the request asks for.
MAINTAINERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


def missing_facts_part(title: str, body: str, author_association: str) -> Part:
    """The request for what a failure's report lacks (``missing_facts.py``), or why none."""
    if author_association.upper() in MAINTAINERS:
        return left_out(PartName.MISSING_FACTS, "the report is by one of the repository's own")
    read = read_facts(title, body)
    if not read.says_it_fails:
        return left_out(PartName.MISSING_FACTS, "the report does not say something fails")
    if not read.ask:
        given = len(MissingFact) - len(read.missing)
        return left_out(
            PartName.MISSING_FACTS, f"the report gives {given} of the 4 facts asked for"
        )
    items = tuple(PartItem(fact.value, why=REQUEST_WORDS[fact]) for fact in read.missing)
    return Part(PartName.MISSING_FACTS, None, None, items, request_text(read.missing))
