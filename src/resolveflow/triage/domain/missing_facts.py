"""What a bug report lacks that a maintainer would ask for first, by documented rules (pure).

A maintainer's first reply to a report that something fails is often a question: which version,
how to reproduce it, what the error said, on what system. This module reads the report's own
text (title and body; the comments are not the reporter's first account) and names the facts it
does not give, in plain words, so the request can be proposed on the day the report arrives.

Only reports that say something fails are asked anything: a feature request or a question needs
no traceback. Each fact is looked for by its usual shapes (a version number, a code block or
numbered steps, an error line or traceback, an operating system or interpreter), generously: a
fact that is probably there is not asked for, since asking for what the reporter already gave
is the noise users forgive least. Nothing of the report's text is ever repeated in the request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

READ_CHARS = 20_000  # what is read of a body: the facts, when given, come early


class MissingFact(StrEnum):
    VERSION = "version"
    REPRODUCTION = "reproduction"
    ERROR_OUTPUT = "error_output"
    ENVIRONMENT = "environment"


# What each missing fact is asked as, in the order a maintainer would ask.
REQUEST_WORDS = {
    MissingFact.VERSION: "the version you are using (of this project and of the library it fails in)",
    MissingFact.REPRODUCTION: "the steps or a short code sample that make it happen",
    MissingFact.ERROR_OUTPUT: "the full error message or traceback, as printed",
    MissingFact.ENVIRONMENT: "your environment: operating system and interpreter or runtime version",
}

_FAILS = re.compile(
    r"\b(bug|error|errors|crash(es|ed|ing)?|fail(s|ed|ing|ure)?|broken|exception|traceback|"
    r"does ?n[o']t work|doesn't work|not working|no longer works|stopped working|regression|"
    r"hangs?|freez(es|ing)|segfault|unexpected(ly)?|wrong|incorrect|cannot|can't|unable to|"
    r"raises?|throws?)\b",
    re.IGNORECASE,
)
_NOT_A_BUG = re.compile(
    r"^\s*(\[?(feature|feature request|request|proposal|rfc|docs?|documentation|question|"
    r"enhancement|idea)\]?\s*[:\]-]|add (support|an? option)|support for\b|how (do|can|to)\b)",
    re.IGNORECASE,
)
# A report about the documentation needs no version or traceback, whatever it calls broken.
_ABOUT_DOCS = re.compile(
    r"\b(typos?|docs?|documentation|docstrings?|readme|tutorial|release notes|changelog|"
    r"website|web site|wiki)\b",
    re.IGNORECASE,
)
_ERROR_SAID = re.compile(
    r"\b(error|errors|exception|traceback|crash(es|ed|ing)?|raises?|raised|throws?|thrown|"
    r"segfault|segmentation fault|panic|fails? with)\b",
    re.IGNORECASE,
)
_BUG_TEMPLATE = re.compile(
    r"^[ \t]*(#+[ \t]*|\*\*)?(describe the bug|bug description|steps to reproduce|"
    r"expected behaviou?r|actual behaviou?r|current behaviou?r)\b",
    re.IGNORECASE | re.MULTILINE,
)
_NOT_A_BUG_TEMPLATE = re.compile(
    r"^[ \t]*(#+[ \t]*|\*\*)?(feature request|is your feature request|motivation|"
    r"proposed (solution|change)|your contribution|describe the solution you'?d like)\b",
    re.IGNORECASE | re.MULTILINE,
)
_VERSION = re.compile(
    r"\bv?\d+\.\d+(\.\d+|\.x|\.\*)?([.-]?(dev|rc|a|b|post)\d*)?\b|\bversion\b\s*[:=]?\s*\S+|"
    r"__version__|\bpip (freeze|show|list)\b|\bconda list\b|\b(main|master) branch\b|"
    r"\binstalled from (source|git|main)\b|\bcommit [0-9a-f]{7,40}\b",
    re.IGNORECASE,
)
# Line-anchored patterns use [ \t], not \s: with MULTILINE "^\s*" runs across newlines and makes
# the scan quadratic in the number of lines.
_CODE = re.compile(r"```|~~~|^(?: {4}|\t)\S", re.MULTILINE)
_STEPS = re.compile(
    r"\b(steps to reproduce|to reproduce|reproduc(e|ible|tion)|minimal (example|code)|"
    r"code (sample|snippet)|snippet|run(ning)? the following|here is (the|my) code|"
    r"colab|notebook)\b|^[ \t]*(\d+[.)]|[-*])[ \t]+\S.*\n[ \t]*(\d+[.)]|[-*])[ \t]+\S",
    re.IGNORECASE | re.MULTILINE,
)
_ERROR_OUTPUT = re.compile(
    r"Traceback \(most recent call last\)|^[ \t]*\w*(Error|Exception|Warning)\b[:(]|"
    r"\berror( message)?:|\bstack ?trace\b|\bpanic(ked)?:|^[ \t]*at [\w.$]+\(|"
    r"\bexit (code|status) \d+|\bsegmentation fault\b|^E\s{2,}|`[^`\n]*(Error|Exception)\b[^`\n]*`",
    re.IGNORECASE | re.MULTILINE,
)
_ENVIRONMENT = re.compile(
    r"\b(linux|ubuntu|debian|fedora|centos|red ?hat|arch linux|alpine|mac ?os|macos|os ?x|"
    r"darwin|windows|win(10|11|32|64)|wsl|android|ios|freebsd|"
    r"python\s*(version)?\s*:?\s*[23](\.\d+)?|py3\d+|node(\.js)?\s*v?\d|java\s*\d|jdk|"
    r"cuda|gpu|cpu|arm64|x86_64|amd64|m1|m2|docker|kubernetes|colab|kaggle|"
    r"platform|environment|env info|system info)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class FactsRead:
    """What was read of one report: whether it says something fails, and what it lacks."""

    says_it_fails: bool
    missing: tuple[MissingFact, ...]

    @property
    def ask(self) -> bool:
        """Worth a request: a failure reported without a way to reproduce it, or lacking two of
        the four facts. One alone is not asked for (an error quoted in plain words is often what
        it printed), nor the version and the system alone: with the steps and the error a report
        can usually be looked into."""
        if not self.says_it_fails:
            return False
        missing = set(self.missing)
        if MissingFact.REPRODUCTION in missing:
            return True
        return len(missing) >= 2 and missing != {MissingFact.VERSION, MissingFact.ENVIRONMENT}


def read_facts(title: str, body: str) -> FactsRead:
    body = body[:READ_CHARS]
    says_it_fails = _says_it_fails(title, body)
    # What it printed is asked for only when the report says it printed something (an error,
    # a crash): a wrong result or a slow call has no traceback to give.
    printed = bool(_ERROR_SAID.search(f"{title}\n{body}"))
    has = {
        MissingFact.VERSION: bool(_VERSION.search(body)),
        MissingFact.REPRODUCTION: bool(_CODE.search(body) or _STEPS.search(body)),
        MissingFact.ERROR_OUTPUT: not printed or bool(_ERROR_OUTPUT.search(body)),
        MissingFact.ENVIRONMENT: bool(_ENVIRONMENT.search(body)),
    }
    missing = tuple(fact for fact in MissingFact if not has[fact])
    return FactsRead(says_it_fails, missing)


def names_a_failure(text: str) -> bool:
    """Whether ``text`` uses a word of failure ("error", "crash", "does not work"...)."""
    return bool(_FAILS.search(text))


def _says_it_fails(title: str, body: str) -> bool:
    """A bug's template, a failure in the title, or a failure in the body beside what it
    printed; never a feature request, a documentation change or a question."""
    if _NOT_A_BUG.search(title) or _ABOUT_DOCS.search(title) or _NOT_A_BUG_TEMPLATE.search(body):
        return False
    if _BUG_TEMPLATE.search(body) or _FAILS.search(title):
        return True
    return bool(_FAILS.search(body) and _ERROR_OUTPUT.search(body))


def request_text(missing: tuple[MissingFact, ...]) -> str:
    """The request, in plain words, naming only what is missing (Markdown; no issue text)."""
    lines = ["To look into this, it would help to know:", ""]
    lines += [f"- {REQUEST_WORDS[fact]}" for fact in missing]
    return "\n".join(lines)
