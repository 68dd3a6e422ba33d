"""OnnxCrossEncoder: ms-marco-MiniLM-L-12-v2 on ONNX Runtime int8, shipped in the package."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from resolveflow.adapters.reranker.onnx_msmarco import MODEL_DIR, OnnxCrossEncoder
from resolveflow.errors import ConfigError

# Written for these tests.
QUESTION = "how do I stop the build from downloading anything"
ANSWER = (
    "Offline mode: pass --offline and the build uses only what is already on disk; it never "
    "reaches the network, and fails if something it needs was not downloaded before."
)
UNRELATED = "The colour of the status bar follows the theme chosen in the preferences window."


def test_the_shipped_files_are_the_ones_summed() -> None:
    for line in (MODEL_DIR / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((MODEL_DIR / name).read_bytes()).hexdigest() == digest, name
    assert "Apache License" in (MODEL_DIR / "LICENSE").read_text()
    assert "ms-marco-MiniLM-L-12-v2" in (MODEL_DIR / "NOTICE").read_text()


def test_a_passage_that_answers_scores_above_one_that_does_not() -> None:
    reranker = OnnxCrossEncoder(threads=2)
    answering, unrelated, again = reranker.scores(QUESTION, [ANSWER, UNRELATED, ANSWER])
    assert answering > unrelated + 5  # logits: far apart, not a near tie
    # Each pair runs alone: its score does not depend on its neighbours or the thread it ran on.
    assert again == answering
    assert reranker.scores(QUESTION, [ANSWER]) == [answering]
    assert reranker.scores(QUESTION, []) == []


def test_a_missing_model_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="RESOLVEFLOW_RERANKER=none"):
        OnnxCrossEncoder(model_dir=tmp_path).scores(QUESTION, [ANSWER])
