"""What an investigation proposes: the comment, its labels, or an escalation for a person. Pure.

Model text is untrusted like issue text: every piece of it is escaped so that HTML, links,
mentions and marker look-alikes are inert. Links in the comment come only from our own index (the
cited snippets' URLs), never from the model. The executor appends its hidden marker itself.
"""

from __future__ import annotations

from collections import defaultdict

from resolveflow.domain.counted import counted, plural
from resolveflow.domain.inert_markdown import inert, inert_title
from resolveflow.domain.inert_markdown import link as inert_link
from resolveflow.triage.domain.diagnosis import Diagnosis, Snippet, url_issue
from resolveflow.triage.domain.review import Review, resolve_reference
from resolveflow.triage.domain.rules import ProposedAction

FOOTER = "Drafted by ResolveFlow and reviewed by a person before it was posted."
NO_MODEL = (
    "No language model was used: these come from a search of this repository's earlier issues "
    "and the pull requests that closed them."
)
HOLDING_COMMENT = (
    "Thanks for the report. A maintainer will take a look.\n\n"
    "Drafted by ResolveFlow and reviewed by a person before it was posted."
)
MAX_NEIGHBOUR_LABELS = 2


def model_text(text: str, limit: int) -> str:
    """Model prose made inert like issue text (URLs defanged too, so that GitHub does not
    autolink them: the only links in a comment come from our index)."""
    return inert(text, limit)


def _ref_text(url: str | None, fallback: str, repository: str) -> str:
    located = url_issue(url)
    if located is None:
        return inert(fallback, 80)
    repo, number = located
    return f"#{number}" if repo == repository.lower() else f"{inert(repo, 100)}#{number}"


def link(url: str | None, fallback: str, repository: str) -> str:
    return inert_link(_ref_text(url, fallback, repository), url)


def related_line(snippet: Snippet, repository: str) -> str:
    """``- [#123](url) (closed): title, fixed by [#456](url)`` with every piece escaped."""
    head = link(snippet.url, f"{snippet.source}:{snippet.external_id}", repository)
    state = f" ({inert(snippet.state, 20)})" if snippet.state else ""
    line = f"- {head}{state}: {inert_title(snippet.title, 120)}"
    fixes = [link(ref, ref, repository) for ref in snippet.resolved_by[:3]]
    if fixes:
        line += ", fixed by " + ", ".join(fixes)
    return line


def related_comment(related: list[Snippet], repository: str) -> str:
    """The ``none`` provider's comment: related reports with links, and how they were resolved."""
    lines = [
        f"ResolveFlow found {counted(len(related), 'earlier report')} that "
        f"{plural(len(related), 'looks', 'look')} related to this one:",
        "",
        *(related_line(s, repository) for s in related),
        "",
        NO_MODEL,
        "",
        FOOTER,
    ]
    return "\n".join(lines)


def diagnosis_comment(diagnosis: Diagnosis, snippets: list[Snippet], repository: str) -> str:
    by_id = {s.id: s for s in snippets}
    lines = [
        "ResolveFlow looked into this report with a language model and earlier issues.",
        "",
        f"**Likely cause:** {model_text(diagnosis.root_cause, 2000)}",
        "",
        f"**Severity:** {diagnosis.severity}",
    ]
    if diagnosis.missing_info:
        lines += ["", "**What would help:**"]
        lines += [f"- {model_text(item, 500)}" for item in diagnosis.missing_info]
    if diagnosis.recommended_next_steps:
        lines += ["", "**Suggested next steps:**"]
        lines += [f"- {model_text(item, 500)}" for item in diagnosis.recommended_next_steps]
    cited = [by_id[c] for c in dict.fromkeys(diagnosis.citations) if c in by_id]
    if cited:
        lines += ["", "**Related reports:**", *(related_line(s, repository) for s in cited)]
    duplicate = (
        resolve_reference(diagnosis.duplicate_of, snippets) if diagnosis.duplicate_of else None
    )
    if duplicate is not None:
        ref = link(duplicate.url, f"{duplicate.source}:{duplicate.external_id}", repository)
        lines += ["", f"This may be a duplicate of {ref}."]
    lines += ["", FOOTER]
    return "\n".join(lines)


def neighbour_labels(related: list[Snippet], allowed: frozenset[str]) -> tuple[str, ...]:
    """Labels that most of the related issues (weighted by relevance) carry, among ``allowed``."""
    total = sum(s.relevance for s in related)
    if total <= 0:
        return ()
    weight: dict[str, float] = defaultdict(float)
    for snippet in related:
        for label in set(snippet.labels) & allowed:
            weight[label] += snippet.relevance
    ranked = sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(label for label, w in ranked if w >= total / 2)[:MAX_NEIGHBOUR_LABELS]


def usable_labels(
    wanted: tuple[str, ...], issue_labels: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Drop labels already on the issue (nothing to do), with a note for each."""
    keep = tuple(label for label in dict.fromkeys(wanted) if label not in issue_labels)
    notes = tuple(
        f"label {label!r} is already on the issue" for label in wanted if label in issue_labels
    )
    return keep, notes


def escalation_action(
    review: Review, triage_label: str | None, allowed: frozenset[str], issue_labels: tuple[str, ...]
) -> ProposedAction:
    """A person decides: the triage label (or a holding comment), the failed gates as notes."""
    notes = [f"escalated: {gate.name}: {gate.reason}" for gate in review.failed]
    notes += list(review.notes)
    labels: tuple[str, ...] = ()
    if triage_label and triage_label in allowed and triage_label not in issue_labels:
        labels = (triage_label,)
    comment = None if labels else HOLDING_COMMENT
    return ProposedAction(comment=comment, labels=labels, notes=tuple(notes))
