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

from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np

from resolveflow.adapters.embedder.protocol import EmbeddingSpace, Vectors, normalize
from resolveflow.adapters.onnx_model import LazyModel, OnnxModel, run_each, usable_cores

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
MODEL_DIR = Path(__file__).resolve().parent / "minilm_onnx"
MODEL_FILE = "model.int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
SPACE = EmbeddingSpace("local", f"{MODEL_NAME}:onnx-int8", DIMENSIONS)


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
        model_dir = model_dir or MODEL_DIR
        self._model = LazyModel(
            model_dir / MODEL_FILE,
            model_dir / TOKENIZER_FILE,
            max_tokens=max_seq_length,
            missing="reinstall resolveflow or rebuild the embedder with scripts/build_onnx_embedder.py",
            loaded="embedder loaded",
            details={
                "model": MODEL_NAME,
                "runtime": "onnxruntime",
                "max_seq_length": max_seq_length,
                "threads": self.threads,
            },
        )

    @property
    def space(self) -> EmbeddingSpace:
        # Not LocalMiniLM's space: torch's int8 path is itself far from the float model (median
        # cosine 0.94), and no ONNX int8 build agrees with it to 0.99 on real texts, so an index
        # made by one is rebuilt for the other (figures in docs/retrieval.md).
        return SPACE

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        loaded = self._model.get()
        # Tokenized together, run alone, ``threads`` at a time.
        token_ids = [encoding.ids for encoding in loaded.tokenizer.encode_batch(list(texts))]
        rows = run_each(partial(self._embed_one, loaded), token_ids, self.threads, "rf-onnx")
        return normalize(np.stack(rows))

    def _embed_one(self, loaded: OnnxModel, token_ids: list[int]) -> Vectors:
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
