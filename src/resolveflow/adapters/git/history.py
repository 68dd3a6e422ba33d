"""A clone's history read once: every commit oldest first, indexed by the pull request it
squash-merged and the issues it says it fixes (``domain/commit_messages.py``), with its file
stats, tracked files and definitions read on demand and kept.

Shared by refine (the changes step and ``eval changes``) and triage (``backtest``'s files a fix
changed), which may not import each other.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from resolveflow.adapters.git.errors import ObjectMissing
from resolveflow.adapters.git.records import CommitInfo, FileStat
from resolveflow.adapters.git.repository import GitRepository
from resolveflow.domain.commit_messages import fix_references, squash_pr


@dataclass
class RepositoryHistory:
    """A clone's history read once: every commit oldest first, indexed by what it fixes."""

    name: str
    repo: GitRepository
    commits: list[CommitInfo]
    by_pull: dict[int, CommitInfo] = field(default_factory=dict)
    by_issue: dict[int, list[CommitInfo]] = field(default_factory=dict)
    by_sha: dict[str, CommitInfo] = field(default_factory=dict)
    _stats: dict[str, list[FileStat]] = field(default_factory=dict)
    _files: dict[str, list[str]] = field(default_factory=dict)
    _definitions: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    _touched: Counter[str] = field(default_factory=Counter)
    _counted: int = 0  # commits[:_counted] are counted in _touched

    def change_counts(self, as_of: datetime | None) -> tuple[Mapping[str, int], int]:
        """How many of the commits at ``as_of`` (all without it) changed each file, and how many
        commits that is. A running count: moments asked in time order read each commit once; an
        earlier moment than the last starts over."""
        end = len(self.commits)
        if as_of is not None:
            end = bisect.bisect_right([c.committed_at for c in self.commits], as_of)
        if end < self._counted:
            self._touched, self._counted = Counter(), 0
        new = [c.sha for c in self.commits[self._counted : end]]
        for changed in self.stats(new).values():
            self._touched.update({s.path for s in changed})
        self._counted = end
        return dict(self._touched), end

    @classmethod
    def read(cls, name: str, repo: GitRepository) -> RepositoryHistory:
        repo.check()
        commits = sorted(repo.commits(), key=lambda c: (c.committed_at, c.sha))
        history = cls(name, repo, commits)
        for commit in commits:
            history.by_sha[commit.sha] = commit
            pull = squash_pr(commit.subject)
            if pull is not None:
                history.by_pull.setdefault(pull, commit)
            for number in fix_references(f"{commit.subject}\n{commit.message}"):
                history.by_issue.setdefault(number, []).append(commit)
        return history

    def snapshot(self, as_of: datetime | None) -> str | None:
        """The newest commit at ``as_of`` (the newest of all without one)."""
        if not self.commits:
            return None
        if as_of is None:
            return self.commits[-1].sha
        at = bisect.bisect_right([c.committed_at for c in self.commits], as_of)
        return self.commits[at - 1].sha if at else None

    def stats(self, shas: Sequence[str]) -> dict[str, list[FileStat]]:
        """File stats of these commits; one git call for those not read yet. A commit whose
        objects are missing is left out (the caller warns)."""
        wanted = [s for s in dict.fromkeys(shas) if s not in self._stats]
        if wanted:
            try:
                self._stats.update(self.repo.file_stats(wanted))
            except ObjectMissing:
                for sha in wanted:  # find which ones: one call each, only on this rare path
                    try:
                        self._stats.update(self.repo.file_stats([sha]))
                    except ObjectMissing:
                        continue
        return {s: self._stats[s] for s in shas if s in self._stats}

    def squash_commits(self, pulls: Iterable[str]) -> list[CommitInfo]:
        """The squash commits of these pull requests (numbers as text) that are in the clone."""
        numbers = (int(p) for p in pulls if p.isdigit())
        return [self.by_pull[n] for n in dict.fromkeys(numbers) if n in self.by_pull]

    def changed_files(self, commits: Iterable[CommitInfo]) -> set[str]:
        """Every file these commits changed (those whose objects are missing left out)."""
        stats = self.stats([c.sha for c in commits])
        return {s.path for changed in stats.values() for s in changed}

    def files_at(self, sha: str) -> list[str]:
        if sha not in self._files:
            self._files[sha] = self.repo.tracked_files(sha)
        return self._files[sha]

    def definitions_at(self, sha: str) -> dict[str, set[str]]:
        if sha not in self._definitions:
            self._definitions[sha] = self.repo.definitions(sha)
        return self._definitions[sha]
