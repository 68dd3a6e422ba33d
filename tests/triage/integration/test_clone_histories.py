"""Triage's likely files read the repository's clone as it is: read once while its HEAD stands
still, read again once commits arrive, and a clone that cannot be read is no likely files."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from git_repos import commit, init
from resolveflow.bootstrap.refine import clone_histories
from resolveflow.policy_file import parse_policy

REPO = "acme/widgets"


def test_the_clone_is_read_again_only_when_its_head_moves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clone = init(tmp_path / "clone")
    commit(clone, 1, "Initial layout", {"src/a.py": "x = 1\n"})
    policy = parse_policy(f'[repositories."{REPO}".refine]\nclone = "{clone}"\n', "p.toml")
    history_for = clone_histories(lambda: policy)

    first = history_for(REPO)
    assert first is not None and len(first.commits) == 1
    assert history_for(REPO) is first  # HEAD stood still: not read again
    fix = commit(clone, 2, "Guard empty input\n\nfixes #13", {"src/a.py": "x = 2\n"})
    again = history_for(REPO)
    assert again is not first and again is not None
    assert [c.sha for c in again.by_issue[13]] == [fix]  # the pulled commit is known

    assert history_for("acme/other") is None  # no clone configured
    missing = parse_policy(
        f'[repositories."{REPO}".refine]\nclone = "{tmp_path / "gone"}"\n', "p.toml"
    )
    gone = clone_histories(lambda: missing)
    with caplog.at_level(logging.WARNING):
        assert gone(REPO) is None and gone(REPO) is None
    assert sum("no likely files" in r.getMessage() for r in caplog.records) == 1
