"""all-MiniLM-L6-v2 on ONNX Runtime, int8, without torch.

The model file ships inside this package (``minilm_onnx/``, built reproducibly from the packaged
weights by ``scripts/build_onnx_embedder.py``, with its Apache-2.0 licence and ``SHA256SUMS``); the
tokenizer runs through ``tokenizers``. Nothing is downloaded and neither torch nor transformers is
imported. It computes what ``LocalMiniLM`` computes (truncation at 128 tokens including [CLS] and
[SEP], mean pooling over the text's tokens, L2 normalisation); agreement and speed figures are in
docs/retrieval.md ("The ONNX embedder").

One text per run: the model quantizes activations dynamically, with one scale per run over the
whole input tensor, so a text run in a batch gets a vector that depends on its neighbours and their
padding (cosine down to 0.986 against the same text alone, as far as int8 is from float). Alone,
every text gets the vector a query gets. Each run uses one core and ``threads`` texts run at once
(the session is thread-safe and ONNX Runtime releases the GIL): on 2 cores 79 texts/s against 56
for one run at a time on both cores, the same vectors bit for bit (docs/retrieval.md).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from resolveflow.adapters.embedder.protocol import EmbeddingSpace, Vectors, normalize
from resolveflow.errors import ConfigError

logger = logging.getLogger(__name__)

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
MODEL_DIR = Path(__file__).resolve().parent / "minilm_onnx"
MODEL_FILE = "model.int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
SPACE = EmbeddingSpace("local", f"{MODEL_NAME}:onnx-int8", DIMENSIONS)


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Any  # tokenizers.Tokenizer (its stubs are partial)
    session: Any  # onnxruntime.InferenceSession (untyped)


class OnnxMiniLM:
    def __init__(
        self,
        *,
        max_seq_length: int = 128,
        threads: int | None = None,
        model_dir: Path | None = None,
    ) -> None:
        self.max_seq_length = max_seq_length
        self.threads = threads or usable_cores()
        self.model_dir = model_dir or MODEL_DIR
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    @property
    def space(self) -> EmbeddingSpace:
        # Not LocalMiniLM's space: torch's int8 path is itself far from the float model (median
        # cosine 0.94), and no ONNX int8 build agrees with it to 0.99 on real texts, so an index
        # made by one is rebuilt for the other (figures in docs/retrieval.md).
        return SPACE

    def _load(self) -> _Loaded:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._open()
            return self._loaded

    def _open(self) -> _Loaded:
        model_path = self.model_dir / MODEL_FILE
        tokenizer_path = self.model_dir / TOKENIZER_FILE
        for path in (model_path, tokenizer_path):
            if not path.is_file():
                raise ConfigError(
                    f"the ONNX embedder's {path.name} is missing at {path}; reinstall resolveflow "
                    "or rebuild it with scripts/build_onnx_embedder.py"
                )
        try:
            import onnxruntime as ort  # type: ignore[import-untyped]
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - an incomplete installation
            raise ConfigError(
                f"the ONNX embedder needs onnxruntime and tokenizers installed ({exc.name} is missing)"
            ) from exc
        started = time.perf_counter()
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json pads every text to a fixed 128; a text runs alone, unpadded.
        tokenizer.enable_truncation(max_length=self.max_seq_length)
        tokenizer.no_padding()
        options = ort.SessionOptions()
        # One core per run; texts run side by side instead (embed_documents): a short text's
        # matrices are too small to share between cores well.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # No spinning between runs (as OMP_WAIT_POLICY=PASSIVE for torch), should a future
        # setting give a run more than one thread: idle threads would take the cores from the
        # Postgres backend the same process waits on next.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        logger.info(
            "embedder loaded",
            extra={
                "model": MODEL_NAME,
                "runtime": "onnxruntime",
                "max_seq_length": self.max_seq_length,
                "threads": self.threads,
                "seconds": round(time.perf_counter() - started, 2),
            },
        )
        return _Loaded(tokenizer=tokenizer, session=session)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        loaded = self._load()
        # Tokenized together, run alone, ``threads`` at a time.
        token_ids = [encoding.ids for encoding in loaded.tokenizer.encode_batch(list(texts))]
        embed = partial(self._embed_one, loaded)
        workers = min(self.threads, len(token_ids))
        if workers == 1:
            rows = [embed(ids) for ids in token_ids]
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="rf-onnx") as pool:
                rows = list(pool.map(embed, token_ids))
        return normalize(np.stack(rows))

    def _embed_one(self, loaded: _Loaded, token_ids: list[int]) -> Vectors:
        ids = np.asarray([token_ids], dtype=np.int64)
        (hidden,) = loaded.session.run(
            None, {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        )
        # Unpadded, every token is the text's own: the mean over all of them is the masked mean.
        pooled: Vectors = np.asarray(hidden, dtype=np.float32)[0].mean(axis=0)
        return pooled

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector


def usable_cores() -> int:
    """The cores this process may run on (a container's affinity), not the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
