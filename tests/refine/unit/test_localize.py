"""Suggested files from a ticket's own words and the fixes of similar tasks (domain/localize.py)."""

from __future__ import annotations

import pytest

from resolveflow.domain.localize import (
    ChangeCounts,
    PastFix,
    match_path,
    named_files,
    suggest_files,
    symbol_files,
    traceback_frames,
    vote_files,
)

FILES = [
    "src/pkg/__init__.py",
    "src/pkg/load.py",
    "src/pkg/builder.py",
    "src/pkg/io/json.py",
    "src/pkg/utils/py_utils.py",
    "tests/test_load.py",
]
TRACEBACK = """Loading fails:

Traceback (most recent call last):
  File "/home/me/run.py", line 3, in <module>
    ds = load_thing("x")
  File "/usr/lib/python3.11/site-packages/pkg/load.py", line 120, in load_thing
    return builder.build()
  File "/usr/lib/python3.11/site-packages/pkg/builder.py", line 88, in build
    raise ValueError("bad split")
ValueError: bad split
"""


def test_a_site_packages_path_is_matched_by_its_longest_tracked_suffix() -> None:
    assert match_path("/usr/lib/python3.11/site-packages/pkg/io/json.py", FILES) == [
        "src/pkg/io/json.py"
    ]
    assert match_path("load.py", FILES) == ["src/pkg/load.py"]
    assert match_path("elsewhere/nothing.py", FILES) == []


def test_traceback_frames_are_read_outermost_first() -> None:
    frames = traceback_frames(TRACEBACK)
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.function) for f in frames] == [
        ("run.py", 3, "<module>"),
        ("load.py", 120, "load_thing"),
        ("builder.py", 88, "build"),
    ]


def test_named_files_ignore_paths_inside_a_traceback() -> None:
    assert named_files(TRACEBACK, FILES) == {}
    assert named_files("the bug is in `io/json.py` and py_utils.py", FILES) == {
        "src/pkg/io/json.py": 1,
        "src/pkg/utils/py_utils.py": 1,
    }


def test_an_identifier_defined_in_many_files_says_nothing() -> None:
    definitions = {"load_thing": {"src/pkg/load.py"}, "build": {f"src/m{i}.py" for i in range(4)}}
    found = symbol_files("calling load_thing() then build()", definitions)
    assert found == {"src/pkg/load.py": 1.0}


def test_votes_prefer_focused_fixes_and_keep_the_commits_behind_each_file() -> None:
    focused = PastFix("1", 0.8, frozenset({"src/pkg/load.py"}), ("aaa",))
    sweeping = PastFix("2", 0.8, frozenset(FILES[:4]), ("bbb",))
    votes, behind = vote_files([focused, sweeping])
    assert votes["src/pkg/load.py"] > votes["src/pkg/builder.py"] > 0
    assert behind["src/pkg/load.py"] == ["aaa", "bbb"]


def test_the_traceback_and_the_votes_rank_together() -> None:
    fixes = [PastFix("7", 0.9, frozenset({"src/pkg/io/json.py"}), ("ccc",))]
    ranked = suggest_files(TRACEBACK, FILES, {}, fixes)
    by_path = {r.path: r for r in ranked}
    # builder.py: a frame and the deepest frame (1.5); load.py: a frame (1.0); json.py: the one
    # similar fix (1.0): a tie, broken by path.
    assert [(r.path, r.score) for r in ranked] == [
        ("src/pkg/builder.py", 1.5),
        ("src/pkg/io/json.py", 1.0),
        ("src/pkg/load.py", 1.0),
    ]
    assert by_path["src/pkg/builder.py"].reasons == [
        "in the ticket's traceback",
        "where the traceback ends",
    ]
    assert by_path["src/pkg/io/json.py"].commits == ["ccc"]


def test_a_file_the_ticket_names_outranks_one_similar_fix() -> None:
    fixes = [PastFix("7", 0.9, frozenset({"src/pkg/io/json.py"}), ("ccc",))]
    ranked = suggest_files("json loading broke, see builder.py", FILES, {}, fixes, limit=1)
    assert [r.path for r in ranked] == ["src/pkg/builder.py"]


# --- the file rules apply to every kind of evidence ---------------------------------------------


def _only_src(path: str) -> bool:
    return path.startswith("src/")


def test_a_file_the_rules_refuse_is_never_suggested_whatever_named_it() -> None:
    """Each kind of evidence alone puts ``tests/test_load.py`` first; with the rules it is gone
    and the allowed files keep their order."""
    test_file = "tests/test_load.py"
    frame = f'  File "/repo/{test_file}", line 9, in test_it\n'
    by_kind = {
        "votes": ("nothing here", {}, [PastFix("1", 0.9, frozenset({test_file}), ("aaa",))]),
        "named": (f"the bug is in {test_file}", {}, []),
        "traceback": (f"Traceback (most recent call last):\n{frame}ValueError: x\n", {}, []),
        "symbols": ("calling check_wiring()", {"check_wiring": {test_file}}, []),
    }
    for kind, (text, definitions, fixes) in by_kind.items():
        unfiltered = suggest_files(text, FILES, definitions, fixes)
        assert unfiltered and unfiltered[0].path == test_file, kind  # the evidence is there
        kept = suggest_files(text, FILES, definitions, fixes, allowed=_only_src)
        assert test_file not in [r.path for r in kept], kind
        assert [r.path for r in kept] == [r.path for r in unfiltered if _only_src(r.path)], kind


def test_the_limit_counts_allowed_files_only() -> None:
    fixes = [PastFix(str(n), 1.0 - n / 10, frozenset({f}), ()) for n, f in enumerate(FILES)]
    kept = suggest_files("text", FILES, {}, list(reversed(fixes)), limit=3, allowed=_only_src)
    assert [r.path for r in kept] == [
        "src/pkg/__init__.py",
        "src/pkg/load.py",
        "src/pkg/builder.py",
    ]


MAIL_FILES = ["src/x/mailbox.py", "src/x/mail/files.py", "src/x/notify/sender.py"]
STDLIB_TRACEBACK = """Importing the export fails:

Traceback (most recent call last):
  File "/home/me/.venv/lib/python3.11/site-packages/x/mail/files.py", line 40, in read_mbox
    for message in mailbox.mbox(path):
  File "/usr/lib/python3.11/mailbox.py", line 779, in get_message
    msg = self._message_factory(self._file.read(stop - start))
UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9
"""


@pytest.mark.parametrize(
    "frame",
    [
        "/usr/lib/python3.11/mailbox.py",
        "/usr/local/lib/python3.12/mailbox.py",
        "/home/me/.pyenv/versions/3.11.4/lib/python3.11/mailbox.py",
        "C:\\Python311\\Lib\\mailbox.py",
        "/home/me/.venv/lib/python3.11/site-packages/mailbox.py",
        "/srv/tools/mailbox.py",
    ],
)
def test_a_frame_outside_the_repository_never_matches_a_file_by_its_base_name(frame: str) -> None:
    assert match_path(frame, MAIL_FILES) == []


def test_a_frame_matches_with_its_package_folders_however_it_was_installed() -> None:
    installed = "/home/me/.venv/lib/python3.11/site-packages/x/mail/files.py"
    assert match_path(installed, MAIL_FILES) == ["src/x/mail/files.py"]
    checkout = "/home/me/work/x-project/src/x/mail/files.py"
    assert match_path(checkout, MAIL_FILES) == ["src/x/mail/files.py"]
    assert match_path("mail/files.py", MAIL_FILES) == ["src/x/mail/files.py"]


def test_the_standard_librarys_mailbox_is_not_the_repositorys() -> None:
    ranked = [r.path for r in suggest_files(STDLIB_TRACEBACK, MAIL_FILES, {}, [])]
    assert ranked == ["src/x/mail/files.py"]
    assert named_files("see /usr/lib/python3.11/mailbox.py line 779", MAIL_FILES) == {}


def test_a_files_weight_falls_with_the_share_of_commits_that_change_it() -> None:
    counts = ChangeCounts({"pyproject.toml": 90, "docs/testing.md": 40, "src/x/mail/files.py": 3},
                          commits=100)  # fmt: skip
    weights = [counts.weight(p) for p in ("src/never.py", "src/x/mail/files.py",
                                          "docs/testing.md", "pyproject.toml")]  # fmt: skip
    assert weights[0] == 1.0 and weights == sorted(weights, reverse=True)
    assert weights[3] < 0.05 < weights[1] - weights[2]
    assert ChangeCounts({"a.py": 5}, commits=5).weight("a.py") == 0.0
    # One similar fix changed the module and the files nearly every change touches: without the
    # counts they tie (path order puts the project file first); with them the module leads.
    fix = PastFix("7", 0.9, frozenset({"pyproject.toml", "docs/testing.md", "src/x/mail/files.py"}))
    files = ["pyproject.toml", "docs/testing.md", *MAIL_FILES]
    plain = suggest_files("mbox import fails", files, {}, [fix])
    assert plain[0].path == "docs/testing.md" and plain[0].score == plain[2].score
    weighed = suggest_files("mbox import fails", files, {}, [fix], counts=counts)
    assert [r.path for r in weighed] == ["src/x/mail/files.py", "docs/testing.md", "pyproject.toml"]
