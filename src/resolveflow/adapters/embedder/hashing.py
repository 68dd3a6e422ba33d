"""A deterministic embedder for tests and demos: hashed bag of words, no model, no downloads.

Texts that share words get similar vectors, so ranking is predictable by hand; it has no idea of
meaning. Selected with ``RESOLVEFLOW_EMBEDDER=fake``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from resolveflow.adapters.embedder.protocol import EmbeddingSpace, Vectors, normalize

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    def __init__(self, dimensions: int = 256, model: str = "hashing-v1") -> None:
        self._space = EmbeddingSpace("fake", model, dimensions)

    @property
    def space(self) -> EmbeddingSpace:
        return self._space

    def _one(self, text: str) -> Vectors:
        vector = np.zeros(self._space.dimensions, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vector[value % self._space.dimensions] += 1.0 if (value >> 32) & 1 else -1.0
        return vector

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._space.dimensions), dtype=np.float32)
        return normalize(np.stack([self._one(text) for text in texts]))

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector
