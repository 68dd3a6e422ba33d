"""Reading a ticket's text for refine: its facts (versions, error lines, stack frames, file paths),
its words and its first plain sentences. Pure; the text is untrusted and only ever read.

Simple rules over lines and regular expressions: each catches the common shapes of a bug report
(a Python or JavaScript traceback, ``pkg==1.2.3``, ``src/x.tsx``) and prefers missing a fact to
inventing one (``1.5 seconds`` is not a version, ``Node.js`` is not a file).
"""

from __future__ import annotations

import re

from resolveflow.refine.domain.document import Facts

MAX_FACTS = 10  # per kind of fact
MAX_FACT_CHARS = 200


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+", re.IGNORECASE)
# Installed packages' frames name the package's own path: ".../site-packages/datasets/x.py".
_SITE = re.compile(r"(?:[A-Za-z]:)?[^\s\"'()]*[/\\](?:site|dist)-packages[/\\]")
_VERSION = re.compile(
    r"(?<![\w.=<>~!-])(?:(?P<name>[A-Za-z][\w-]*)(?P<sep>==|>=|<=|~=|!=|@| ))?"
    r"(?P<ver>v?\d+(?:\.\d+){1,2}(?:(?:a|b|rc|\.dev|\.post)\d+)?)(?!\.?\d|[\w-])"
)
_NOT_NAMES = _words(
    "a an the and or of to in on at by for from with since after before until than is was are "
    "were be been using use used upgrading upgraded updating updated version versions release v "
    "ver line lines about around like also but not"
)
_EXCEPTION = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Invalid|Fault)"
_ERROR_LINE = re.compile(rf"^\s*(?:{_EXCEPTION}(?::\s*\S.*)?|(?i:error|fatal|panic):\s*\S.*)$")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?::\s*\S.*)?$")  # the line ending a traceback
_ERROR_TYPE = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b")
_PY_FRAME = re.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?')
_JS_FRAME = re.compile(r"\bat\s+([\w.$<>]+)\s+\(([^()\s]+?):(\d+)(?::\d+)?\)")
_EXTENSIONS = (
    "py|pyi|pyx|ipynb|js|jsx|mjs|cjs|ts|tsx|vue|svelte|css|scss|less|html|htm|json|yaml|yml|"
    "toml|cfg|ini|conf|env|sh|bash|rs|go|java|kt|c|h|cc|cpp|hpp|cs|rb|php|sql|md|rst|txt|lock|"
    "xml|gradle|tf|proto"
)
_PATH = re.compile(rf"(?<![\w/.@~-])(?:~?/)?(?:[\w.-]+/)*[\w-][\w.-]*\.(?:{_EXTENSIONS})(?![\w/])")
_TERM = re.compile(r"[a-z_][a-z0-9_]*")
STOPWORDS = _words(
    "the and for are but not you your with this that from have has had was were will would can "
    "could should into when then than there their they them what which who how why all any also "
    "its our out use used using get got some such only just like been being does did doing here "
    "after before about over under again more most other same very too while where each hi "
    "hello thanks thank please team issue problem"
)
_GREETING = re.compile(r"^(?:hi|hello|hey|dear|good (?:morning|afternoon))\b[^.!?\n]{0,30}[,!]?$",
                       re.IGNORECASE)  # fmt: skip


def _bounded(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        cut = item if len(item) <= MAX_FACT_CHARS else item[: MAX_FACT_CHARS - 1] + "…"
        if cut not in out:
            out.append(cut)
        if len(out) == MAX_FACTS:
            break
    return out


def _versions(text: str) -> list[str]:
    found: list[str] = []
    seen: set[str] = set()
    for m in _VERSION.finditer(text):
        name, ver = m.group("name"), m.group("ver")
        named = name is not None and name.lower() not in _NOT_NAMES
        if not named and not ver.startswith("v") and ver.count(".") < 2 and m.group("sep") != "==":
            continue  # a bare "1.5" is a number more often than a version
        number = ver.lstrip("v")
        if number not in seen:
            seen.add(number)
            sep = " " if m.group("sep") == " " else m.group("sep") or ""
            found.append(f"{name}{sep}{ver}" if named else ver)
    return found


def _errors(lines: list[str]) -> list[str]:
    found: list[str] = []
    in_traceback = False
    for line in lines:
        if line.startswith("Traceback (most recent call last)"):
            in_traceback = True
            continue
        if in_traceback and line.strip() and not line[0].isspace():
            in_traceback = False
            if _EXCEPTION_LINE.match(line.strip()):
                found.append(line.strip())
                continue
        if _ERROR_LINE.match(line):
            found.append(line.strip())
    return found


def _frames(text: str) -> list[str]:
    found = [(m.start(), f"{m.group(1)}:{m.group(2)}" + (f" in {m.group(3)}" if m.group(3) else ""))
             for m in _PY_FRAME.finditer(text)]  # fmt: skip
    found += [(m.start(), f"{m.group(2)}:{m.group(3)} in {m.group(1)}")
              for m in _JS_FRAME.finditer(text)]  # fmt: skip
    return [frame for _, frame in sorted(found)]


def _paths(text: str) -> list[str]:
    found = []
    for m in _PATH.finditer(text):
        path = m.group().removeprefix("./")
        if "/" not in path and path.lower().endswith(".js"):
            continue  # Node.js, Vue.js: names of projects far more often than files
        found.append(path)
    return found


def extract_facts(text: str) -> Facts:
    """Versions, error lines, stack frames and file paths in order of appearance, deduplicated,
    at most ``MAX_FACTS`` of each and ``MAX_FACT_CHARS`` characters per item."""
    text = _SITE.sub("", _URL.sub(" ", text.replace("\r\n", "\n")))
    return Facts(
        versions=_bounded(_versions(text)),
        errors=_bounded(_errors(text.split("\n"))),
        stack_frames=_bounded(_frames(text)),
        file_paths=_bounded(_paths(text)),
    )


def error_types(text: str) -> list[str]:
    """The exception names a text mentions anywhere (``ValueError``), in order."""
    return list(dict.fromkeys(_ERROR_TYPE.findall(text)))


def same_file(a: str, b: str) -> bool:
    """Whether two paths name the same file: equal, or one is the other's tail
    (``src/pkg/x.py`` and ``pkg/x.py``, a clone path and a traceback's)."""
    a, b = a.lstrip("/"), b.lstrip("/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def terms(text: str) -> list[str]:
    """The words worth comparing, lower case, in order, once each: identifiers (``num_proc``)
    stay whole, dotted names split (``Dataset.map``), short and common words are left out."""
    words = (w.strip("_") for w in _TERM.findall(text.lower()))
    return list(dict.fromkeys(w for w in words if len(w) >= 3 and w not in STOPWORDS))


# --- plain sentences for the summary -----------------------------------------------------------

_FENCED = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]{0,200}>")
# Markup runs; a "~" that starts a home path (``~/exports/sent.mbox``) is kept.
_MARKUP = re.compile(r"[`*#>|]+|~+(?![/\\])|(?<!\w)_+|_+(?!\w)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def _prose_lines(body: str) -> list[str]:
    body = _TAG.sub(" ", _LINK.sub(r"\1", _IMAGE.sub(" ", _FENCED.sub("\n", body))))
    lines = []
    for raw in body.split("\n"):
        line = raw.strip()
        if not line or raw[:1].isspace() or _GREETING.match(line):
            continue  # indented lines are code or traceback frames
        if _ERROR_LINE.match(line) or line.startswith("Traceback ("):
            continue  # facts, said separately
        lines.append(line)
    return lines


def plain_sentences(body: str, limit: int) -> list[str]:
    """The first ``limit`` sentences of the body's prose: code, HTML, images and link targets
    removed, URLs left out, one paragraph."""
    prose = " ".join(_prose_lines(body))
    prose = " ".join(_MARKUP.sub(" ", _URL.sub(" ", prose)).split())
    return [s for s in _SENTENCE_END.split(prose) if s][:limit]
