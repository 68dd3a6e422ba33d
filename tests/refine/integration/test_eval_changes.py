"""``eval changes`` on the real hf-datasets issues and history (the data tier)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from resolveflow.refine.evaluation import evaluate_changes
from resolveflow.retrieval.search import SearchParams
from resolveflow.store.database import Database


def test_suggested_files_meet_the_dev_targets(
    db: Database, shared_data: Path, tmp_path: Path
) -> None:
    from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM

    data = shared_data / "hf-datasets"
    clone = tmp_path / "datasets"
    subprocess.run(
        ["git", "clone", "--quiet", str(data / "datasets-2023.bundle"), str(clone)],
        check=True,
        timeout=120,
    )
    result = evaluate_changes(
        db,
        OnnxMiniLM(),  # the default embedder
        SearchParams(),
        [data / "issues.jsonl", data / "pulls.jsonl"],
        data / "fix_links.tsv",
        clone,
        since=datetime(2023, 1, 1, tzinfo=UTC),
    )
    checks = result.checks()
    assert result.issues >= 90, result.as_json()
    assert all(c["met"] for c in checks.values()), checks
    # The reference rankings measured side by side stay below refine's.
    assert result.refine.hit5 > result.votes_only.hit5 > result.most_changed.hit5
