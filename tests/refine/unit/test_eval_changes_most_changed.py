"""``eval changes``' reference ranking "the files changed most often": a running count over the
history in time order gives what recounting every earlier commit for each issue gave, and reads
each commit's files once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from resolveflow.adapters.git import CommitInfo, FileStat
from resolveflow.adapters.git.history import RepositoryHistory
from resolveflow.refine.evaluation import MostChanged

START = datetime(2023, 1, 1, tzinfo=UTC)
FILES = ["src/a.py", "src/b.py", "src/c.py", "docs/x.md", "src/d.py"]


class _Repo:
    """File stats of invented commits; counts the commits asked for."""

    def __init__(self, stats: dict[str, list[FileStat]]) -> None:
        self.stats = stats
        self.asked: list[str] = []

    def file_stats(self, shas: Sequence[str]) -> dict[str, list[FileStat]]:
        self.asked.extend(shas)
        return {s: self.stats[s] for s in shas}


def _history() -> tuple[RepositoryHistory, _Repo]:
    commits, stats = [], {}
    for n in range(40):
        sha = f"{n:040x}"
        # two commits share each moment: "earlier" is strict, so both count or neither does
        commits.append(CommitInfo(sha, START + timedelta(hours=n // 2), f"c{n}", ""))
        stats[sha] = [FileStat(FILES[(n * k) % len(FILES)], 1, 0) for k in (1, 2) if n % (k + 1)]
    repo = _Repo(stats)
    history: Any = RepositoryHistory("r", repo, commits)  # type: ignore[arg-type]
    return history, repo


def _recounted(history: RepositoryHistory, moment: datetime) -> list[str]:
    """The ranking as it was computed before: every earlier commit counted again."""
    earlier = [c.sha for c in history.commits if c.committed_at < moment]
    counts: Counter[str] = Counter()
    for stats in history.stats(earlier).values():
        counts.update(s.path for s in stats if s.path.startswith("src/"))
    return [p for p, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def test_the_running_count_ranks_as_the_recount_did_and_reads_each_commit_once() -> None:
    history, repo = _history()
    moments = [START - timedelta(hours=1), START, *(START + timedelta(hours=h) for h in (0, 3, 3,
               7, 19, 30))]  # fmt: skip
    most = MostChanged(history)
    ranked = [most.before(moment) for moment in moments]
    assert len(repo.asked) == len(set(repo.asked)) == 40  # once each, in time order
    expected_history, _ = _history()
    assert ranked == [_recounted(expected_history, moment) for moment in moments]
    assert ranked[0] == [] and ranked[-1][0].startswith("src/")


def test_an_earlier_moment_after_a_later_one_is_still_right() -> None:
    history, _ = _history()
    most = MostChanged(history)
    late, early = START + timedelta(hours=15), START + timedelta(hours=4)
    assert most.before(late) == _recounted(history, late)
    assert most.before(early) == _recounted(history, early)
    assert most.before(late) == _recounted(history, late)
