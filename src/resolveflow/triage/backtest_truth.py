"""What the maintainers did, as the backtest's ground truth: the topical labels each issue ended
with, its earlier known duplicates (``duplicates.tsv``), how it was closed where the corpus says
(Bugzilla's ``resolution``, GitHub's ``state_reason``, a ``duplicate`` label: read here and only
here, never by the replay), the earlier issues one merged pull request fixed with it
(``fix_links.tsv``), and, with a clone, the files its fixing pull requests' squash commits
changed (``adapters/git/history.py``, the same reading as ``eval changes``).

Also the checks of ``--clone`` and ``--docs``: one clear line when either is not what it should be.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from resolveflow.adapters.git import CloneMissing, GitRepository
from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.errors import InvalidInput
from resolveflow.retrieval.records import SourceDocument
from resolveflow.triage.domain.backtest_figures import ClosedAs, GroundTruth
from resolveflow.triage.known_relations import KnownCase, known_cases
from resolveflow.triage.labels import topical

CLONE_NAME = "corpus"
DUPLICATE_LABEL = "duplicate"
# How a closed issue was resolved: Bugzilla's ``resolution`` (FIXED, DUPLICATE, WORKSFORME, ...)
# and GitHub's ``state_reason`` (completed, not_planned, duplicate; reopened says nothing).
_SAYS_HOW = ("resolution", "state_reason")
_SAYS_NOTHING = frozenset({"", "reopened"})


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
    resolutions: Mapping[str, str] | None = None,
) -> GroundTruth:
    """The ground truth of the ``replayed`` issues. ``duplicates`` None: no pairs were given
    (an empty list says there are none); ``resolutions`` (``read_resolutions``) and the
    ``duplicate`` label say how issues were closed, when the corpus carries either."""
    labels = {
        d.external_id: frozenset(topical(d.labels))
        for d in documents
        if d.kind == "issue" and d.external_id in replayed and topical(d.labels)
    }
    pairs = None if duplicates is None else _earlier(known_cases(documents, duplicates))
    links = dict(merged_fix_links or {})
    same_fix = _earlier(known_cases(documents, fix_links=links))
    files = fix_files(history, {i: links[i] for i in replayed if i in links}) if history else {}
    closed = closed_as(documents, replayed, resolutions or {})
    return GroundTruth(labels, pairs, same_fix, files, closed)


def read_resolutions(corpora: Iterable[Path]) -> dict[str, str]:
    """Issue id -> how it was resolved (``resolution`` or ``state_reason``, lower case), for the
    records of the corpus files that say; read apart from the documents the replay is given, so
    no part can read it."""
    found: dict[str, str] = {}
    for path in corpora:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
        for line in lines:
            record = json.loads(line) if line.strip() else None
            if not isinstance(record, dict) or (record.get("kind") or "issue") != "issue":
                continue
            how = next((record.get(key) for key in _SAYS_HOW if record.get(key)), None)
            if isinstance(how, str) and how.strip().lower() not in _SAYS_NOTHING:
                found[str(record.get("id")).strip()] = how.strip().lower()
    return found


def closed_as(
    documents: Sequence[SourceDocument], replayed: Collection[str], resolutions: Mapping[str, str]
) -> dict[str, ClosedAs] | None:
    """How each replayed issue was closed, where known; None when the corpus carries neither a
    resolution nor a ``duplicate`` label on any issue (it says nothing of how issues close)."""
    labelled = {
        d.external_id
        for d in documents
        if d.kind == "issue" and DUPLICATE_LABEL in (label.lower() for label in d.labels)
    }
    if not resolutions and not labelled:
        return None
    known = {i: _closed(how) for i, how in resolutions.items() if i in replayed}
    known.update({i: ClosedAs.DUPLICATE for i in labelled if i in replayed})
    return known


def _closed(how: str) -> ClosedAs:
    return ClosedAs.DUPLICATE if how == DUPLICATE_LABEL else ClosedAs.OTHER


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
