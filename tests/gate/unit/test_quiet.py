"""Quiet by default (issue 31, part 3), the pure part: the policy file's ``suggestions`` tables
(merged kind by kind, a bad one refused in one line naming the file and the field), where a kind
goes given its figures, what an ``off`` leaves of a suggestion, and the inbox's line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from resolveflow.bootstrap.policy import PRODUCT_SECTIONS
from resolveflow.domain.vocabulary import SuggestionKind, SuggestionMode
from resolveflow.errors import ConfigError
from resolveflow.gate.domain.quiet import (
    DigestWhy,
    QuietRules,
    apply_off,
    moved_line,
    place_modes,
    route,
)
from resolveflow.gate.domain.suggestions import Acceptance
from resolveflow.policy_file import parse_policy

K, M = SuggestionKind, SuggestionMode
POLICY = """
[defaults.suggestions]
duplicate = "digest"
draft = "always"

[repositories."acme/widgets".suggestions]
label = "off"
draft = "on"
"""


def _figures(approved: int, rejected: int, kind: SuggestionKind = K.DUPLICATE) -> Acceptance:
    return Acceptance("acme/widgets", kind, "", approved, 0, rejected, datetime.now(UTC))


def test_a_repository_overrides_the_defaults_kind_by_kind() -> None:
    policy = parse_policy(POLICY, "policy.toml", PRODUCT_SECTIONS)
    assert place_modes(policy, "ACME/Widgets") == {
        K.DUPLICATE: M.DIGEST,
        K.DRAFT: M.ON,
        K.LABEL: M.OFF,
    }
    assert place_modes(policy, "acme/gadgets") == {K.DUPLICATE: M.DIGEST, K.DRAFT: M.ALWAYS}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('[repositories."acme/widgets".suggestions]\nduplicat = "off"', "duplicat"),
        ('[repositories."acme/widgets".suggestions]\nduplicate = "sometimes"', "duplicate"),
        ("[defaults.suggestions]\nlabel = 1", "defaults.suggestions.label"),
        ('[repositories."acme/widgets"]\nsuggestions = "off"', "acme/widgets.suggestions"),
    ],
)
def test_a_bad_table_fails_the_load_in_one_line(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_policy(text, "policy.toml", PRODUCT_SECTIONS)
    message = raised.value.message
    assert "\n" not in message and message.startswith("policy.toml: ")
    assert where in message and "suggestions" in message


def test_on_moves_to_the_digest_below_the_floor_with_enough_decisions() -> None:
    rules = QuietRules(floor=0.5, minimum=10, last=50)
    low = route("acme/widgets", K.DUPLICATE, M.ON, _figures(3, 9), rules)
    assert (low.mode, low.why) == (M.DIGEST, DigestWhy.ACCEPTANCE)
    few = route("acme/widgets", K.DUPLICATE, M.ON, _figures(0, 9), rules)  # 9 < 10 decisions
    assert (few.mode, few.why) == (M.ON, None)
    at_floor = route("acme/widgets", K.DUPLICATE, M.ON, _figures(6, 6), rules)
    assert at_floor.mode is M.ON
    # always, off and digest are the policy file's and are never moved; labels are never moved
    assert route("acme/widgets", K.DUPLICATE, M.ALWAYS, _figures(0, 20), rules).mode is M.ALWAYS
    assert route("acme/widgets", K.DUPLICATE, M.OFF, _figures(0, 20), rules).mode is M.OFF
    set_digest = route("acme/widgets", K.DUPLICATE, M.DIGEST, None, rules)
    assert (set_digest.mode, set_digest.why) == (M.DIGEST, DigestWhy.POLICY)
    label = route("acme/widgets", K.LABEL, M.ON, _figures(0, 20, K.LABEL), rules)
    assert label.mode is M.ON


def test_off_drops_the_kind_or_its_labels_and_says_why() -> None:
    modes = {K.LABEL: M.OFF, K.REVIEW_REQUEST: M.OFF}
    gone = apply_off(modes, "acme/widgets", K.REVIEW_REQUEST, ("needs-triage",))
    assert not gone.proposed and gone.notes == (
        "review request suggestions are off for acme/widgets (policy file)",
    )
    kept = apply_off(modes, "acme/widgets", K.DUPLICATE, ("bug",))
    assert kept.proposed and kept.labels == ()
    assert kept.notes == ("label suggestions are off for acme/widgets (policy file)",)
    untouched = apply_off({}, "acme/widgets", K.DUPLICATE, ("bug",))
    assert untouched.proposed and untouched.labels == ("bug",) and untouched.notes == ()


def test_the_inbox_line_names_the_place_the_kind_and_the_figures() -> None:
    assert moved_line(_figures(3, 9), 0.5) == (
        "Duplicate suggestions on acme/widgets go to the digest: 3 of 12 approved over the last"
        " 12 decisions (floor 50 %)."
    )
