"""What a commit's subject and message say: the pull request it squash-merged (``Subject (#PR)``,
GitHub's squash merge) and the issues it closes (GitHub's closing keywords).

Pure text rules; git itself is read by ``adapters/git``, whose ``RepositoryHistory`` indexes a
clone's commits by them, and refine decides from them which commits fixed an issue.
"""

from __future__ import annotations

import re

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
