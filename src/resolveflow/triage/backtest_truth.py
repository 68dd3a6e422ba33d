"""What the maintainers did, as the backtest's ground truth: the topical labels each issue ended
with, its earlier known duplicates (``duplicates.tsv``), the earlier issues one merged pull request
fixed with it (``fix_links.tsv``), and, with a clone, the files its fixing pull requests' squash
commits changed (``adapters/git/history.py``, the same reading as ``eval changes``).

Also the checks of ``--clone`` and ``--docs``: one clear line when either is not what it should be.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from resolveflow.adapters.git import CloneMissing, GitRepository
from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.errors import InvalidInput
from resolveflow.retrieval.records import SourceDocument
from resolveflow.triage.domain.backtest_figures import GroundTruth
from resolveflow.triage.known_relations import KnownCase, known_cases
from resolveflow.triage.labels import topical

CLONE_NAME = "corpus"


def read_clone(path: Path) -> RepositoryHistory:
    """The clone's history, read once; a path that is not a git repository is one line."""
    try:
        return RepositoryHistory.read(CLONE_NAME, GitRepository(path))
    except CloneMissing as exc:
        raise InvalidInput(f"--clone: {exc}") from None


def check_docs(path: Path) -> Path:
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        raise InvalidInput(f"--docs: {path} {what}")
    return path


def ground_truth(
    documents: Sequence[SourceDocument],
    replayed: Collection[str],
    *,
    duplicates: Iterable[tuple[str, str]] | None = None,
    merged_fix_links: Mapping[str, set[str]] | None = None,
    history: RepositoryHistory | None = None,
) -> GroundTruth:
    """The ground truth of the ``replayed`` issues. ``duplicates`` None: no pairs were given,
    so a duplicate flag cannot be verified (an empty list says there are none)."""
    labels = {
        d.external_id: frozenset(topical(d.labels))
        for d in documents
        if d.kind == "issue" and d.external_id in replayed and topical(d.labels)
    }
    pairs = None if duplicates is None else _earlier(known_cases(documents, duplicates))
    links = dict(merged_fix_links or {})
    same_fix = _earlier(known_cases(documents, fix_links=links))
    files = fix_files(history, {i: links[i] for i in replayed if i in links}) if history else {}
    return GroundTruth(labels, pairs, same_fix, files)


def fix_files(
    history: RepositoryHistory, links: Mapping[str, Iterable[str]]
) -> dict[str, frozenset[str]]:
    """Issue -> every file its merged fixing pull requests' squash commits changed (issues whose
    fix is not in the clone, or whose commits' objects are missing, are left out)."""
    commits = {issue: history.squash_commits(prs) for issue, prs in links.items()}
    history.stats([c.sha for found in commits.values() for c in found])  # one git call for all
    changed = {issue: history.changed_files(found) for issue, found in commits.items()}
    return {issue: frozenset(paths) for issue, paths in changed.items() if paths}


def _earlier(cases: Iterable[KnownCase]) -> dict[str, frozenset[str]]:
    return {c.issue: c.related for c in cases}
