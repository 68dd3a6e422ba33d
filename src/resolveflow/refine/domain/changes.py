"""Which commits fixed an issue: the pure rules over commit subjects and messages.

Git itself is read by ``adapters/git``; this module only decides, from text, which commits say
they fix an issue (GitHub's closing keywords) or are the squash commit of a pull request
(``Subject (#PR)``), so the same rules serve the refine step and its evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Protocol, TypeVar


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


# Only at the very end of the subject: GitHub's squash merge appends "(#PR)", while "(#12)"
# earlier in a subject is usually a reference, not the merge.
_SQUASH = re.compile(r"\(#([1-9][0-9]*)\)\s*\Z")

# GitHub's closing keywords, as whole words: "prefixes #3" or "hotfix #3" must not count.
_KEYWORD = r"(?<![\w/.#-])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
# A same-repository reference: '#' right after a space, digits, then not a word character or
# '/' (so "#12abc" and "owner/repo#12" do not count: the '#' must follow whitespace or ':').
_NUMBER = r"#[1-9][0-9]*(?![\w/])"
# After the keyword: an optional colon ("Fixes: #12"), then one reference; more may follow
# joined by ",", "and" or "&" ("closes #3, #4 and #5"), each a reference of its own.
_FIX = re.compile(
    rf"{_KEYWORD}(?:\s*:\s*|\s+)({_NUMBER})((?:\s*(?:,|&|\band\b)\s*{_NUMBER})*)",
    re.IGNORECASE,
)
_MORE = re.compile(r"#([1-9][0-9]*)")


def squash_pr(subject: str) -> int | None:
    """The pull request number of a squash-merge subject: ``'Fix x (#1234)'`` gives 1234.

    Only a trailing ``(#N)`` counts (trailing spaces allowed); ``'Fix (#12) in x'`` gives None.
    """
    found = _SQUASH.search(subject)
    return int(found.group(1)) if found else None


def fix_references(text: str) -> frozenset[int]:
    """The issue numbers ``text`` says it closes, with GitHub's closing keywords.

    Accepted, case-insensitive: ``close``, ``closes``, ``closed``, ``fix``, ``fixes``, ``fixed``,
    ``resolve``, ``resolves``, ``resolved`` as a whole word, then whitespace or a colon, then
    ``#N``; further ``#N`` joined by ``,``, ``and`` or ``&`` count too (``closes #3, #4``).
    Not accepted: other repositories' references (``owner/repo#12``, ``GH-12``), full URLs,
    ``#N`` glued to a word (``fixes #12abc``), a keyword inside a word (``prefixes #3``,
    ``hotfix #3``, ``path/fix #3``) and ``#N`` not right after the keyword (``fixes the bug
    in #3``: GitHub would not close it either).
    """
    numbers: set[int] = set()
    for found in _FIX.finditer(text):
        numbers.update(int(n) for n in _MORE.findall(found.group(1) + found.group(2)))
    return frozenset(numbers)


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
