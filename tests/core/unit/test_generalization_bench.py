"""The pure helpers of benchmarks/generalization.py: the metrics, the worst-case pick and the
identifier features of the duplicate re-ranker."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).parents[3] / "benchmarks" / "generalization.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generalization_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_rank_metrics(bench: ModuleType) -> None:
    ranks = [1, 2, None, 6]
    assert bench.mrr_at(ranks, 5) == pytest.approx((1 + 0.5) / 4)
    assert bench.recall_at(ranks, 5) == 0.5
    assert bench.mrr_at(ranks, 10) == pytest.approx((1 + 0.5 + 1 / 6) / 4)
    assert bench.mrr_at([], 5) == 0.0
    assert bench.first_rank(["a", "b", "c"], {"c", "z"}, 3) == 3
    assert bench.first_rank(["a", "b", "c"], {"c"}, 2) is None


def test_margins_skip_figures_without_a_target(bench: ModuleType) -> None:
    figures = {"x": 0.8, "y": 0.5, "other": 0.1}
    assert bench.margins(figures, {"x": 0.7, "y": 0.6, "missing": 1.0}) == pytest.approx(
        [-0.1, 0.1]
    )


def test_the_worst_margin_decides_then_the_next_worst(bench: ModuleType) -> None:
    rows = {
        "best on average": [-0.05, 0.30, 0.30],
        "safe": [-0.01, 0.02, 0.03],
        "safe, more room next": [-0.01, 0.05, 0.01],
    }
    assert bench.pick_by_worst_case(rows) == ["safe, more room next", "safe", "best on average"]


@pytest.fixture(scope="module")
def rerank(monkeypatch_module: pytest.MonkeyPatch) -> ModuleType:
    # rerank_duplicates.py imports its neighbour as the script does: from its own folder.
    monkeypatch_module.syspath_prepend(str(SCRIPT.parent))
    import rerank_duplicates  # type: ignore[import-not-found]

    module: ModuleType = rerank_duplicates
    return module


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_identifiers_are_the_rare_kinds_of_token(rerank: ModuleType) -> None:
    text = (
        "LSOpenURLsWithRole() failed; NS_ERROR_FAILURE in nsIFoo.bar at "
        "/usr/lib/seamonkey/libxul.so, a TypeError, version 2.53.12, getElementById"
    )
    found = rerank.identifiers(text)
    for expected in (
        "lsopenurlswithrole",
        "ns_error_failure",
        "nsifoo.bar",
        "/usr/lib/seamonkey/libxul.so",
        "typeerror",
        "getelementbyid",
    ):
        assert expected in found
    assert not any(x.startswith("2.53") for x in found)  # version numbers are not identifiers
    assert rerank.jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert rerank.jaccard(set(), set()) == 0.0
