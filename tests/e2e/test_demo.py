"""``resolveflow demo --once`` in a real process: embedded Postgres, the sandbox forge, a signed
webhook, the worker's triage run, an approval through the API, and the comment posted once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def test_demo_runs_to_completion_and_posts_once() -> None:
    # A short temporary folder: Postgres' socket path must stay under ~100 characters.
    tmp_path = Path(tempfile.mkdtemp(prefix="rfd", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
    env.update(RESOLVEFLOW_EMBEDDER="fake", TMPDIR=str(tmp_path), COLUMNS="200")
    result = subprocess.run(
        [sys.executable, "-m", "resolveflow", "demo", "--once", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["classification"] == "deterministic"
    assert summary["execution_state"] == "sent" and summary["run_status"] == "completed"
    assert summary["comments_on_issue"] == 1
    assert summary["labels_on_issue"] == ["ci-failure"]
    assert summary["indexed_issues"] == 5
    assert summary["similar"], "search over the indexed sample issues found nothing"
    assert summary["url"].startswith("http://127.0.0.1:")
    assert "Sandbox forge (NOT GitHub)" in result.stderr
    assert list(tmp_path.glob("resolveflow-demo-*")) == []  # the throwaway database is gone
    shutil.rmtree(tmp_path, ignore_errors=True)
