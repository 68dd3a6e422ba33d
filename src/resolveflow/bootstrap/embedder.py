"""The configured embedder, for the composition root (``bootstrap/app.App.embedder``) and the commands
that index or search without a whole ``App``. Models load lazily, on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resolveflow.config import Settings
from resolveflow.errors import ConfigError

if TYPE_CHECKING:  # numpy, behind the protocol, loads with the first embedder, not at start
    from resolveflow.adapters.embedder.protocol import Embedder
    from resolveflow.adapters.reranker.protocol import Reranker

__all__ = ["build_embedder", "build_reranker"]


def build_reranker(settings: Settings) -> Reranker | None:
    """``local`` (the default): ms-marco-MiniLM-L-12-v2 on ONNX Runtime, int8, shipped inside
    the package; ``none``: Ask's ranking alone. The model loads on its first question."""
    if settings.embedding.reranker == "none":
        return None
    from resolveflow.adapters.reranker.onnx_msmarco import OnnxCrossEncoder

    return OnnxCrossEncoder(threads=settings.embedding.threads)


def build_embedder(settings: Settings) -> Embedder:
    """``local`` (the default): all-MiniLM-L6-v2 on ONNX Runtime, int8, shipped inside the
    package, no torch; ``local-torch``: the same model through sentence-transformers (the
    ``torch`` extra); ``openai``: any OpenAI-compatible ``/embeddings``; ``fake``: hashing."""
    embedding = settings.embedding
    if embedding.provider == "fake":
        from resolveflow.adapters.embedder.hashing import HashingEmbedder

        return HashingEmbedder()
    if embedding.provider == "openai":
        from resolveflow.adapters.embedder.openai_embeddings import OpenAIEmbedder

        if not embedding.openai_base_url:
            raise ConfigError(
                "RESOLVEFLOW_EMBEDDER=openai needs RESOLVEFLOW_OPENAI_EMBEDDINGS_BASE_URL"
            )
        key = embedding.openai_api_key
        return OpenAIEmbedder(
            embedding.openai_base_url,
            key.get_secret_value() if key else None,
            embedding.openai_model,
            dimensions=embedding.openai_dimensions,
            timeout_seconds=embedding.timeout_seconds,
        )
    if embedding.provider == "local-torch":
        from resolveflow.adapters.embedder.local import LocalMiniLM

        return LocalMiniLM(
            max_seq_length=embedding.max_seq_length,
            quantize=embedding.quantize,
            batch_size=embedding.batch_size,
        )
    from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM

    return OnnxMiniLM(max_seq_length=embedding.max_seq_length, threads=embedding.threads)
