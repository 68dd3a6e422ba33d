"""A duplicate floor fitted from decisions on SeaMonkey's own history (issue 31, data tier):
the bugs filed before the split stand for the team's decisions (a suggestion approved when it
names the bug's known original), and on the bugs after it the fitted floor is more precise than
the default without losing recall below the stated floor."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.bootstrap.app import investigation_config
from resolveflow.config import Settings
from resolveflow.retrieval.sources import read_pairs
from resolveflow.store.database import Database
from resolveflow.triage.backtest import run_backtest
from resolveflow.triage.floor_backtest import RECALL_FLOOR


def test_the_fitted_floor_is_more_precise_on_seamonkey_without_losing_recall(
    db: Database, shared_data: Path
) -> None:
    folder = shared_data / "seamonkey"
    report = run_backtest(
        db,
        OnnxMiniLM(),
        [folder / "corpus.jsonl"],
        datetime(2020, 1, 1, tzinfo=UTC),
        config=investigation_config(Settings()),
        fit_before=datetime(2022, 8, 25, tzinfo=UTC),  # about half the bugs on each side
        duplicates=read_pairs(folder / "duplicates.tsv"),
    )
    floor = report.floor
    assert floor is not None and floor.fitted.fitted, floor
    assert floor.fitted.value > floor.default.floor
    assert floor.with_fitted.made < floor.default.made
    assert floor.with_fitted.precision > floor.default.precision
    assert floor.with_fitted.recall >= RECALL_FLOOR
    assert floor.default.right >= 5  # enough known duplicates after the split to mean something
