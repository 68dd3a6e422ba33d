"""Property-based fuzzing of a repository's ``.github/resolveflow.yml`` as a run reads it
(Hypothesis): ``checked``, what ``load`` does with the file's bytes, then the merge a run makes of
what it kept. Files of the schema's keys with wrong, hostile and valid values, in flow and block
style; nesting 30,000 deep in both styles; anchors, aliases and merge keys; huge scalars; keys
given twice; YAML and Python tags, directives and several documents; random bytes, invalid UTF-8,
control characters; over the size bound.

Each file may only be applied or not applied with its one-line reasons, never raise, within a
bounded time and a bounded peak of memory (the process's high-water mark, reset before each case
through ``/proc/self/clear_refs``). The default suite runs 300 cases; the ``fuzz`` tier
(``-m fuzz``) runs 10,000 and prints what they did.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from process_memory import reset_peak, status_mb
from resolveflow.policy_file import parse_policy
from resolveflow.triage.domain.repository_config import CONFIG_PATH, MAX_BYTES
from resolveflow.triage.repository_config import ConfigCache, checked, effective_policy

SMALL, FULL = 300, 10_000
CASE_SECONDS = 10.0  # one file on a loaded machine; the worst seen is about 0.5 s
MAX_CASE_PEAK_MB = 150  # one file's peak over what was resident (64 KB of YAML is a few MB)
REPO = "acme/widgets"
POLICY = parse_policy(
    """
[defaults.suggestions]
duplicate = "digest"

[repositories."acme/widgets"]
extra_labels = { human_review = ["bug", "documentation"] }

[repositories."acme/widgets".refine]
scopes = { frontend = ["web/**"], backend = ["server/**"] }
include = ["web/**", "server/**"]
"""
)


@pytest.fixture(
    params=[SMALL, pytest.param(FULL, marks=[pytest.mark.fuzz, pytest.mark.timeout(1800)])],
    ids=str,
)
def cases(request: pytest.FixtureRequest) -> int:
    return int(request.param)


# --- pieces -------------------------------------------------------------------------------------

KEYS = [
    "labels", "rules", "suggestions", "quiet_hours", "refine", "name", "when_label",
    "when_title_prefix", "classification", "between", "time_zone", "scopes", "frontend",
    "backend", "include", "exclude", "duplicate", "label", "review_request", "projects",
    "mailboxes", "extra_labels", "<<", "on", "yes", "true", "1", "~", "? x", "",
]  # fmt: skip
SCALARS = [
    "bug", "documentation", "security", "needs-triage", "human_review", "deterministic",
    "ai_investigation", "on", "off", "digest", "always", "yes", "no", "~", "null", "true",
    "'22:00-07:00'", "Europe/Berlin", "Mars/Olympus", "'web/**'", "'**'", '""', "''", "'[docs]'",
    "1e309", "-.inf", ".nan", "0x1F", "0o17", "1_000", "2024-13-45", "2024-01-01 10:00:00",
    "9" * 5000, '"\\x00\\ud800"', '"\\U0010FFFF"', "!!binary aGk=", "!!binary '!!'",
    "!!python/object:os.system {}", "!!python/name:os.system", "!custom x", "!!set {a}",
    "!!omap [a: 1]", "!!pairs [a: 1]", "!!timestamp x", "!!int x", "!!float y", "!!bool maybe",
    "!<tag:yaml.org,2002:str> x", "&a x", "*a", "|\n  block\n", ">-\n  folded\n", "? complex",
    "- dash", "key: value", "{", "]", "'unterminated", '"esc \\q"', "@reserved", "`tick",
]  # fmt: skip
key = st.one_of(st.sampled_from(KEYS), st.text(max_size=12))
scalar = st.one_of(st.sampled_from(SCALARS), st.text(max_size=30))


@st.composite
def flow(draw: st.DrawFn, depth: int = 0) -> str:
    """A flow-style node: a scalar, a list or a mapping (keys possibly given twice)."""
    kind = draw(st.sampled_from(["scalar", "list", "map"] if depth < 8 else ["scalar"]))
    if kind == "scalar":
        return draw(scalar)
    if kind == "list":
        items = draw(st.lists(flow(depth + 1), max_size=4))
        return "[" + ", ".join(items) + "]"
    pairs = draw(st.lists(st.tuples(key, flow(depth + 1)), max_size=4))
    return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"


@st.composite
def block(draw: st.DrawFn, indent: int = 0, depth: int = 0) -> str:
    """A block-style mapping or list (flow nodes inside); tags and anchors here and there."""
    pad = " " * indent
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        prefix = draw(st.sampled_from(["", "", "", "&a ", "!!map ", "!!seq ", "!x "]))
        head = f"{pad}- " if draw(st.booleans()) else f"{pad}{draw(key)}:"
        if depth < 8 and draw(st.booleans()):
            lines.append(f"{head} {prefix}".rstrip())
            lines.append(draw(block(indent + 2, depth + 1)))
        else:
            lines.append(f"{head} {draw(flow(depth + 1))}")
    return "\n".join(lines)


def _valid_ish(labels: list[str], prefix: str, mode: str, between: str) -> str:
    rule = f"  - name: r\n    when_title_prefix: {prefix}\n    classification: human_review\n"
    return (
        f"labels: [{', '.join(labels)}]\nrules:\n{rule}suggestions:\n  label: {mode}\n"
        f"quiet_hours:\n  between: {between}\nrefine:\n  include: ['web/**']\n"
    )


valid_ish = st.builds(
    _valid_ish,
    st.lists(st.sampled_from(["bug", "documentation", "security", "needs-triage"]), max_size=4),
    st.sampled_from(["'[docs]'", '""', "x", "~", "[a]"]),
    st.sampled_from(["off", "digest", "on", "always", "loud"]),
    st.sampled_from(["'22:00-07:00'", "22-7", "'25:00-01:00'"]),
)
deep = st.builds(  # opening, closing (when closed), what ends it; 30,000 deep fits 64 KB
    lambda shape, n, closed: shape[0] * n + (shape[1] * n if closed else "") + shape[2],
    st.sampled_from(
        [
            ("[", "]", ""),
            ("{a: ", "}", ""),
            ("[{a: ", "}]", ""),
            ("- ", "", "x\n"),
            ("? ", "", "x\n"),
            ("!!seq [", "]", ""),
            ("&a [", "]", ""),
        ]
    ),
    st.integers(0, 35_000),
    st.booleans(),
)
indented = st.builds(
    lambda n, item: "".join(" " * i + (f"k{i}:\n" if not item else "-\n") for i in range(n)),
    st.integers(0, 400),
    st.booleans(),
)
aliases = st.builds(
    lambda n, width: (
        "a0: &a0 [x]\n"
        + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]\n" for i in range(1, n))
    ),
    st.integers(1, 12),
    st.integers(1, 9),
)
huge = st.builds(
    lambda before, unit, n, after: before + unit * n + after,
    st.sampled_from(["labels: [", "labels: ['", 'labels: ["', "# ", "labels: |\n  ", "x: "]),
    st.sampled_from(["a", "\\u00e9", "é", " ", "\n  ", "'' ", "ab, "]),
    st.integers(0, 70_000),
    st.sampled_from(["]", "']", '"]', "", "\n"]),
)
duplicated = st.builds(
    lambda lines, n: "".join(lines * n),
    st.lists(
        st.sampled_from(["labels: [bug]\n", "on: 1\n", "yes: 2\n", "<<: {a: 1}\n"]), min_size=1
    ),
    st.integers(1, 3),
)
headers = st.sampled_from(["", "%YAML 1.1\n---\n", "%YAML 2.0\n---\n", "%TAG ! tag:x,1:\n---\n",
                           "--- !!map\n", "---\n", "\ufeff", "...\n"])  # fmt: skip
trailers = st.sampled_from(["", "\n---\nlabels: [x]\n", "\n...\n", "\n--- *a\n"])
texts = st.one_of(
    valid_ish,
    st.builds(lambda h, b, t: h + b + t, headers, block(), trailers),
    st.builds(lambda h, f: h + f, headers, flow()),
    deep,
    indented,
    aliases,
    huge,
    duplicated,
)
NASTY = [b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\t", b"\x85",
         b"\xe2\x80\xa8", b"\x1b"]  # fmt: skip


@st.composite
def spliced(draw: st.DrawFn) -> bytes:
    """A generated text with bytes cut out or put in: invalid UTF-8, controls, truncation."""
    data = draw(texts).encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(NASTY)) + data[at + draw(st.integers(0, 3)) :]
    return data


files = st.one_of(
    st.binary(max_size=2000),
    st.builds(lambda t: t.encode("utf-8", "surrogatepass"), texts),
    spliced(),
).map(lambda data: data[: MAX_BYTES + 100])

# Always run, whatever the draw: the file that failed runs (64 KB nested 32,000 deep), the same
# depth in block style, a billion laughs and a key given twice.
ALWAYS = (
    b"[" * 32_000 + b"]" * 32_000,
    b"- " * 30_000 + b"x\n",
    b"a: &a [x, x]\n"
    + b"".join(b"%c: &%c [*%c, *%c]\n" % (c, c, c - 1, c - 1) for c in range(98, 108)),
    b"labels: [bug]\nlabels: [security]\n",
)


# --- the property -------------------------------------------------------------------------------


def _check(data: bytes, cache: ConfigCache, ran: Counter[str]) -> None:
    read = checked(f"sha{ran['cases']}", data, cache, REPO, POLICY)  # a new blob each time
    assert (read.config is None) == bool(read.errors), read
    for line in read.errors:
        assert line.startswith(f"`{CONFIG_PATH}`") and "\n" not in line, line
    kept = json.loads(json.dumps(read.as_state()))  # what the checkpoint keeps
    effective_policy(POLICY, REPO, kept, datetime.now(UTC)).for_repository(REPO)
    ran["applied" if read.config is not None else "not applied"] += 1


def _run(cases: int) -> None:
    ran = Counter[str]()
    slowest, worst = 0.0, 0.0
    cache = ConfigCache(size=8)

    @settings(
        max_examples=cases, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(data=files)
    @example(data=ALWAYS[0])
    @example(data=ALWAYS[1])
    @example(data=ALWAYS[2])
    @example(data=ALWAYS[3])
    def one_case(data: bytes) -> None:
        nonlocal slowest, worst
        resident, started = reset_peak(), time.monotonic()
        _check(data, cache, ran)
        took, peak = time.monotonic() - started, status_mb("VmHWM:") - resident
        slowest, worst = max(slowest, took), max(worst, peak)
        assert took < CASE_SECONDS, (took, data[:200])
        assert peak < MAX_CASE_PEAK_MB, (peak, data[:200])
        ran["cases"] += 1

    one_case()
    print(
        f"\nrepository config fuzz: {ran['cases']} files ({ran['applied']} applied, "
        f"{ran['not applied']} not applied); slowest {slowest:.2f} s; largest peak {worst:.0f} MB"
        " over resident"
    )
    assert ran["cases"] >= cases
    assert ran["not applied"] > 0 and ran["applied"] > 0  # both outcomes were reached


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # huge inputs' repr
def test_fuzzed_repository_files_are_applied_or_not_never_raised(cases: int) -> None:
    _run(cases)
