"""Which earlier issues a past issue is known to relate to, read from a corpus's answers:
``duplicates.tsv`` pairs and ``fix_links.tsv`` (issues the same pull request fixed). Used by
``eval diagnoses`` (its cases) and ``backtest --fit-before`` (what a team would approve)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from resolveflow.retrieval.records import SourceDocument

DUPLICATE = "duplicate"
SAME_FIX = "same fix"


@dataclass(frozen=True)
class KnownCase:
    issue: str  # the external id of the issue to diagnose
    related: frozenset[str]  # earlier issues known to relate to it
    how: str  # duplicate | same fix


def known_cases(
    documents: Sequence[SourceDocument],
    duplicates: Iterable[tuple[str, str]] = (),
    fix_links: dict[str, set[str]] | None = None,
) -> list[KnownCase]:
    """Every issue of the corpus with an earlier issue known to relate to it, oldest first."""
    created = {
        d.external_id: d.created_at
        for d in documents
        if d.kind == "issue" and d.created_at is not None
    }
    related: dict[str, set[str]] = defaultdict(set)
    how: dict[str, str] = {}
    for a, b in duplicates:
        if a in created and b in created and a != b:
            later, earlier = (a, b) if (created[a], a) > (created[b], b) else (b, a)
            related[later].add(earlier)
            how[later] = DUPLICATE
    fixed: dict[str, set[str]] = defaultdict(set)
    for issue, prs in (fix_links or {}).items():
        for pr in prs:
            fixed[pr].add(issue)
    for issues in fixed.values():
        known = sorted((created[i], i) for i in issues if i in created)
        for n, (_, issue) in enumerate(known):
            if n:
                related[issue].update(i for _, i in known[:n])
                how.setdefault(issue, SAME_FIX)
    ordered = sorted(related, key=lambda i: (created[i], i))
    return [KnownCase(i, frozenset(related[i]), how[i]) for i in ordered]
