"""Which commits fixed an issue: the pure rules over commit subjects and messages.

Git itself is read by ``adapters/git``; this module only decides, from what the commits' text
says (``domain/commit_messages.py``: squash subjects ``Subject (#PR)`` and GitHub's closing
keywords), which commits fixed an issue, so the same rule serves the refine step and its
evaluation.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Protocol, TypeVar

from resolveflow.domain.commit_messages import fix_references, squash_pr


class Commit(Protocol):
    """What the rules read of a commit (``adapters.git.CommitInfo`` is one)."""

    @property
    def sha(self) -> str: ...
    @property
    def committed_at(self) -> datetime: ...
    @property
    def subject(self) -> str: ...
    @property
    def message(self) -> str: ...


C = TypeVar("C", bound=Commit)


def fixing_commits(commits: Iterable[C], issue_number: int, fix_prs: Collection[int]) -> list[C]:
    """The commits that fixed the issue: squash commits of ``fix_prs`` (the pull requests linked
    as its fix) and commits whose subject or message says it fixes ``#issue_number``.

    Oldest first (ties keep the input order), each commit once.
    """
    found: dict[str, C] = {}
    for commit in commits:
        if commit.sha in found:
            continue
        pull = squash_pr(commit.subject)
        says = fix_references(f"{commit.subject}\n{commit.message}")
        if (pull is not None and pull in fix_prs) or issue_number in says:
            found[commit.sha] = commit
    return sorted(found.values(), key=lambda commit: commit.committed_at)
