"""Retrieval's own errors (each under one category of ``resolveflow.errors``, like every error
we raise)."""

from __future__ import annotations

from resolveflow.errors import ConfigurationError


class EmbeddingSpaceMismatch(ConfigurationError):
    """The index was built with another embedder: run `resolveflow index rebuild`."""

    @classmethod
    def between(cls, indexed: str, configured: str) -> EmbeddingSpaceMismatch:
        return cls(
            f"this tenant's index holds vectors of {indexed} but the configured embedder makes "
            f"{configured}: run `resolveflow index rebuild` (or configure the embedder the index "
            "was built with)",
            indexed=indexed,
            configured=configured,
        )
