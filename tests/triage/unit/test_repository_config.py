"""A repository's ``.github/resolveflow.yml``: the parse, its limits, the narrowing rules and
every error line (triage/domain/repository_config.py, triage/repository_config.py)."""

from __future__ import annotations

import inspect
import sys
from datetime import UTC, datetime, time

import pytest

from resolveflow.domain.vocabulary import SuggestionKind, SuggestionMode
from resolveflow.gate.domain.quiet import place_modes
from resolveflow.policy_file import Classification, PolicyFile, parse_policy
from resolveflow.triage.domain.repository_config import (
    MAX_BYTES,
    QuietHours,
    RepositoryConfig,
    narrowed,
    narrowing_problems,
)
from resolveflow.triage.repository_config import (
    ConfigCache,
    ConfigRead,
    checked,
    effective_policy,
    parse,
)

REPO = "acme/widgets"
POLICY = parse_policy(
    """
[defaults]
triage_label = "needs-triage"
ci_label = "ci-failure"

[defaults.suggestions]
duplicate = "digest"

[repositories."acme/widgets"]
extra_labels = { human_review = ["bug", "documentation"] }

[repositories."acme/widgets".refine]
scopes = { frontend = ["web/**", "*.tsx"], backend = ["server/**"] }
include = ["web/**", "server/**"]
exclude = ["**/vendor/**"]
"""
)


def lines(text: str) -> list[str]:
    """Every problem of ``text`` against POLICY, as the run page shows them."""
    parsed = parse(text.encode())
    problems = list(parsed.problems)
    if parsed.config is not None:
        problems += narrowing_problems(parsed.config, POLICY, REPO)
    return [parsed.placed(p).text() for p in problems]


def config(text: str) -> RepositoryConfig:
    parsed = parse(text.encode())
    assert parsed.config is not None, parsed.problems
    return parsed.config


# --- parse and schema -------------------------------------------------------------------------


def test_a_full_file_parses_into_the_model() -> None:
    found = config(
        """
labels: [bug, needs-triage]
rules:
  - name: docs
    when_title_prefix: "[docs]"
    classification: human_review
    labels: [documentation]
suggestions:
  label: off
  review_request: digest
quiet_hours:
  between: "22:00-07:00"
  time_zone: Europe/Berlin
refine:
  scopes: {frontend: ["web/**"]}
  include: ["web/**"]
  exclude: ["web/generated/**"]
"""
    )
    assert found.labels == ("bug", "needs-triage")
    assert found.rules[0].classification is Classification.HUMAN_REVIEW
    # YAML 1.1 reads a bare off as false: it is the mode it spells
    assert found.suggestions == {
        SuggestionKind.LABEL: SuggestionMode.OFF,
        SuggestionKind.REVIEW_REQUEST: SuggestionMode.DIGEST,
    }
    assert found.quiet_hours == QuietHours(between="22:00-07:00", time_zone="Europe/Berlin")
    assert found.refine is not None and found.refine.include == ("web/**",)


def test_an_empty_file_narrows_nothing() -> None:
    assert config("") == RepositoryConfig()
    assert config("# nothing yet\n") == RepositoryConfig()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "labels: [bug]\nlables: [x]\n",
            "`.github/resolveflow.yml` line 2: lables: unknown field 'lables'",
        ),
        (
            "projects:\n  ops: {}\n",
            "`.github/resolveflow.yml` line 1: projects: 'projects' is configured by the"
            " tenant's policy, not by a repository",
        ),
        (
            "mailboxes: [support]\n",
            "`.github/resolveflow.yml` line 1: mailboxes: 'mailboxes' is configured by the"
            " tenant's policy, not by a repository",
        ),
        (
            "suggestions:\n  label: loud\n",
            "`.github/resolveflow.yml` line 2: suggestions.label: Input should be 'on',"
            " 'always', 'digest' or 'off'",
        ),
        (
            "rules:\n  - name: x\n    classification: human_review\n",
            "`.github/resolveflow.yml` line 2: rules.0: Value error, a rule needs when_label"
            " or when_title_prefix",
        ),
        (
            "quiet_hours:\n  between: 22-7\n",
            "`.github/resolveflow.yml` line 2: quiet_hours.between: String should match"
            " pattern '^([01]\\d|2[0-3]):([0-5]\\d)-([01]\\d|2[0-3]):([0-5]\\d)$'",
        ),
        (
            "quiet_hours:\n  between: '22:00-07:00'\n  time_zone: Mars/Olympus\n",
            "`.github/resolveflow.yml` line 3: quiet_hours.time_zone: unknown time zone"
            " 'Mars/Olympus'",
        ),
        ("- a list\n", "`.github/resolveflow.yml` line 1: the file must be a mapping of settings"),
        ("labels: [bug\n", "`.github/resolveflow.yml` line 2: not valid YAML:"),
        (
            "labels: &l [bug]\nrules: *l\n",
            "`.github/resolveflow.yml` line 2: rules: anchors and aliases are not allowed",
        ),
        (
            "refine:\n  scopes:\n    frontend:\n      - [[[[['deep']]]]]\n",
            "`.github/resolveflow.yml` line 4: refine.scopes.frontend.0.0.0.0: nested deeper"
            " than 6 levels",
        ),
        ("!!python/object:os.system {}\n", "`.github/resolveflow.yml` line 1: not valid YAML:"),
    ],
)
def test_each_schema_problem_is_one_line_naming_its_place(text: str, expected: str) -> None:
    found = lines(text)
    assert found and found[0].startswith(expected), found


def test_a_file_over_the_size_bound_is_not_parsed() -> None:
    text = "labels: [bug]\n" + "#" * MAX_BYTES
    assert lines(text) == [
        f"`.github/resolveflow.yml`: the file is {len(text)} bytes; at most {MAX_BYTES} are read"
    ]


def test_bytes_that_are_not_utf8() -> None:
    assert parse(b"labels: [\xff]\n").problems[0].message == "the file is not UTF-8 text"


# --- narrowing --------------------------------------------------------------------------------


def test_a_label_the_policy_does_not_allow_is_an_error_naming_it() -> None:
    assert lines("labels:\n  - bug\n  - security\n") == [
        "`.github/resolveflow.yml` line 3: labels.1: 'security' is not allowed for acme/widgets"
        " by the tenant's policy"
    ]


def test_labels_narrow_every_branch() -> None:
    policy = narrowed(POLICY, REPO, config("labels: [bug, ci-failure]"), quiet_now=False)
    repository = policy.for_repository(REPO)
    assert repository.labels_for(Classification.HUMAN_REVIEW) == {"bug"}
    assert repository.labels_for(Classification.DETERMINISTIC) == {"ci-failure"}
    # the tenant's own reading is unchanged
    assert POLICY.for_repository(REPO).labels_for(Classification.HUMAN_REVIEW) == {
        "bug",
        "documentation",
        "needs-triage",
    }


def test_a_rule_may_add_only_labels_its_branch_allows() -> None:
    text = (
        "rules:\n  - name: ci\n    when_label: flaky\n    classification: deterministic\n"
        "    labels: [documentation]\n"
    )
    assert lines(text) == [
        "`.github/resolveflow.yml` line 5: rules.0.labels.0: 'documentation' is not allowed for"
        " deterministic on acme/widgets by the tenant's policy"
    ]
    ok = text.replace("deterministic", "human_review")
    rules = narrowed(POLICY, REPO, config(ok), quiet_now=False).for_repository(REPO).rules
    assert [rule.name for rule in rules] == ["ci"]


def test_the_tenants_rules_run_before_the_repositorys() -> None:
    policy = parse_policy(
        '[[repositories."acme/widgets".rules]]\nname = "tenant"\nwhen_label = "x"\n'
        'classification = "human_review"\n'
    )
    found = config("rules:\n  - {name: repo, when_label: y, classification: human_review}\n")
    rules = narrowed(policy, REPO, found, quiet_now=False).for_repository(REPO).rules
    assert [rule.name for rule in rules] == ["tenant", "repo"]


@pytest.mark.parametrize(
    ("kind", "mode", "louder"),
    [
        ("duplicate", "digest", False),  # the policy says digest: as quiet is fine
        ("duplicate", "off", False),
        ("duplicate", "on", True),  # louder than the policy's digest
        ("label", "always", True),  # the policy's default is on
        ("label", "digest", False),
    ],
)
def test_a_suggestion_kind_can_only_be_made_quieter(kind: str, mode: str, louder: bool) -> None:
    found = lines(f"suggestions:\n  {kind}: {mode}\n")
    if louder:
        assert found == [
            f"`.github/resolveflow.yml` line 2: suggestions.{kind}: {mode!r} is louder than the"
            f" tenant's policy allows for acme/widgets "
            f"({'digest' if kind == 'duplicate' else 'on'!r}); a repository can only make a kind"
            " quieter"
        ]
    else:
        assert found == []
        modes = place_modes(
            narrowed(POLICY, REPO, config(f"suggestions: {{{kind}: {mode}}}"), quiet_now=False),
            REPO,
        )
        assert modes[SuggestionKind(kind)] is SuggestionMode(mode)


def test_quiet_hours_send_the_inbox_to_the_digest_and_keep_off_off() -> None:
    found = config("suggestions: {label: off}\nquiet_hours: {between: '22:00-07:00'}\n")
    modes = place_modes(narrowed(POLICY, REPO, found, quiet_now=True), REPO)
    assert modes[SuggestionKind.RULE_COMMENT] is SuggestionMode.DIGEST
    assert modes[SuggestionKind.LABEL] is SuggestionMode.OFF
    awake = place_modes(narrowed(POLICY, REPO, found, quiet_now=False), REPO)
    assert awake.get(SuggestionKind.RULE_COMMENT, SuggestionMode.ON) is SuggestionMode.ON


@pytest.mark.parametrize(
    ("between", "at", "inside"),
    [
        ("22:00-07:00", time(23, 30), True),
        ("22:00-07:00", time(6, 59), True),
        ("22:00-07:00", time(7, 0), False),
        ("22:00-07:00", time(12, 0), False),
        ("12:00-13:00", time(12, 30), True),
        ("12:00-13:00", time(13, 0), False),
    ],
)
def test_quiet_hours_cover_across_midnight(between: str, at: time, inside: bool) -> None:
    assert QuietHours(between=between).covers(at) is inside


def test_quiet_hours_are_read_in_their_time_zone() -> None:
    kept = ConfigRead(
        "sha", config("quiet_hours: {between: '22:00-07:00', time_zone: Asia/Tokyo}")
    ).as_state()
    # 14:00 UTC is 23:00 in Tokyo: quiet there
    quiet = effective_policy(POLICY, REPO, kept, datetime(2025, 1, 1, 14, 0, tzinfo=UTC))
    awake = effective_policy(POLICY, REPO, kept, datetime(2025, 1, 1, 3, 0, tzinfo=UTC))
    assert place_modes(quiet, REPO)[SuggestionKind.RULE_COMMENT] is SuggestionMode.DIGEST
    assert place_modes(awake, REPO).get(SuggestionKind.RULE_COMMENT) is not SuggestionMode.DIGEST


def test_refine_can_narrow_scopes_include_and_add_excludes() -> None:
    text = (
        "refine:\n  scopes: {frontend: ['web/**']}\n  include: ['web/**']\n"
        "  exclude: ['web/gen/**']\n"
    )
    assert lines(text) == []
    refine = narrowed(POLICY, REPO, config(text), quiet_now=False).for_repository(REPO).refine
    assert refine["scopes"] == {"frontend": ["web/**"], "backend": ["server/**"]}
    assert refine["include"] == ["web/**"]
    assert refine["exclude"] == ["**/vendor/**", "web/gen/**"]


def test_refine_cannot_widen() -> None:
    text = "refine:\n  scopes: {backend: ['**']}\n  include: ['docs/**']\n"
    assert lines(text) == [
        "`.github/resolveflow.yml` line 2: refine.scopes.backend.0: '**' is not one of the"
        " tenant's backend globs for acme/widgets",
        "`.github/resolveflow.yml` line 3: refine.include.0: 'docs/**' is not among the files"
        " the tenant's policy includes for acme/widgets",
    ]


def test_a_file_with_any_problem_is_not_applied() -> None:
    kept = ConfigRead("sha", None, ("a problem",)).as_state()
    assert effective_policy(POLICY, REPO, kept, datetime.now(UTC)) is POLICY


def test_the_cache_parses_a_sha_once() -> None:
    cache = ConfigCache(size=2)
    for _ in range(3):
        cache.parsed("a", b"labels: [bug]\n")
    assert cache.parses == 1
    cache.parsed("b", b"labels: [bug]\n")
    cache.parsed("c", b"labels: [bug]\n")
    cache.parsed("a", b"labels: [bug]\n")  # pushed out by b and c: parsed again
    assert cache.parses == 4


def test_other_repositories_are_untouched() -> None:
    policy = narrowed(POLICY, REPO, config("labels: [bug]"), quiet_now=False)
    assert isinstance(policy, PolicyFile)
    other = policy.for_repository("acme/other")
    assert other.labels_for(Classification.HUMAN_REVIEW) == {"needs-triage"}


# --- hostile files: refused before they are built, never raised -------------------------------

FLOW_DEEP = "[" * 32_000 + "]" * 32_000  # 64 KB: PyYAML's recursive composer ran out of stack
BLOCK_DEEP = "- " * 30_000 + "x\n"  # the same depth in block style, on one line
MAPPING_DEEP = "".join(" " * i + f"k{i}:\n" for i in range(300)) + " " * 300 + "v\n"


@pytest.mark.parametrize(
    "text", [FLOW_DEEP, BLOCK_DEEP, MAPPING_DEEP], ids=["flow", "block", "map"]
)
def test_deep_nesting_is_refused_before_the_tree_is_built(text: str) -> None:
    # Composing a node per level takes a few frames: a stack of 150 frames more than the test's
    # own is room for the allowed depth, not for 30,000 levels (the old parse needed ~100,000).
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 150)
    try:
        parsed = parse(text.encode())
    finally:
        sys.setrecursionlimit(limit)
    (problem,) = parsed.problems
    assert parsed.config is None
    assert problem.message == "nested deeper than 6 levels", problem


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "labels: [bug]\nsuggestions: {label: off}\nlabels: [security]\n",
            "`.github/resolveflow.yml` line 3: labels: the key 'labels' is given twice (first on"
            " line 1)",
        ),
        (
            "rules:\n  - name: docs\n    when_label: docs\n    when_label: x\n"
            "    classification: human_review\n",
            "`.github/resolveflow.yml` line 4: rules.0.when_label: the key 'when_label' is given"
            " twice (first on line 3)",
        ),
        (  # two spellings of one key once read: YAML 1.1's on and yes are both true
            "suggestions: {on: off, yes: digest}\n",
            "`.github/resolveflow.yml` line 1: suggestions.yes: the key 'yes' is given twice"
            " (first on line 1)",
        ),
        (
            "<<: {labels: [bug]}\nlabels: [security]\n",
            "`.github/resolveflow.yml` line 1: merge keys (<<) are not allowed",
        ),
    ],
)
def test_a_key_given_twice_is_refused_naming_it_and_its_line(text: str, expected: str) -> None:
    assert lines(text) == [expected]


@pytest.mark.parametrize("prefix", ['""', "''"])
def test_a_rule_with_an_empty_title_prefix_is_refused(prefix: str) -> None:
    text = f"rules:\n  - name: all\n    when_title_prefix: {prefix}\n    classification: deterministic\n"
    assert lines(text) == [
        "`.github/resolveflow.yml` line 3: rules.0.when_title_prefix: an empty prefix matches"
        " every title; name the prefix the rule is for"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "labels: [" + "9" * 5000 + "]\n",  # past Python's digits for int(): ValueError
        "labels: [2024-13-45]\n",  # a timestamp no calendar has: ValueError
        "labels: [!!binary 'not base64 at all!']\n",
        "labels: [!!float 'x']\n",
        "? [[a]]\n: b\n",  # a list as a key
        "labels: *nowhere\n",
        "labels: [bug]\n---\nlabels: [x]\n",
        "\ufeff\x00labels: [bug]\n",
    ],
)
def test_whatever_the_parser_raises_is_the_files_problem(text: str) -> None:
    parsed = parse(text.encode("utf-8", "surrogatepass"))
    assert parsed.config is None and len(parsed.problems) == 1
    assert "\n" not in parsed.placed(parsed.problems[0]).text()


def test_a_refused_file_is_parsed_once_per_sha() -> None:
    cache = ConfigCache()
    first = cache.parsed("deep", FLOW_DEEP.encode())
    again = cache.parsed("deep", FLOW_DEEP.encode())
    assert first is again and cache.parses == 1
    assert first.config is None and first.problems[0].message == "nested deeper than 6 levels"


def test_a_run_keeps_at_most_twenty_problem_lines() -> None:
    text = "labels: [" + ", ".join(f"nope{i}" for i in range(30)) + "]\n"
    read = checked("sha", text.encode(), ConfigCache(), REPO, POLICY)
    assert read.config is None and len(read.errors) == 21
    assert read.errors[0].endswith(
        "labels.0: 'nope0' is not allowed for acme/widgets by the tenant's policy"
    )
    assert read.errors[-1] == "`.github/resolveflow.yml`: 10 more problems not shown"
