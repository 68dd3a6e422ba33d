"""Which embedder each RESOLVEFLOW_EMBEDDER builds (nothing is loaded until first use)."""

from __future__ import annotations

import pytest

from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.embedder.local import LocalMiniLM
from resolveflow.adapters.embedder.onnx_minilm import OnnxMiniLM
from resolveflow.bootstrap.embedder import build_embedder
from resolveflow.config import EmbeddingSettings, Settings
from resolveflow.errors import ConfigError


def settings(**embedding: object) -> Settings:
    return Settings(embedding=EmbeddingSettings(**embedding))  # type: ignore[arg-type]


def test_the_default_is_minilm_on_onnx_runtime_without_torch() -> None:
    built = build_embedder(Settings())
    assert isinstance(built, OnnxMiniLM)
    assert built.space.model.endswith(":onnx-int8") and built.space.dimensions == 384
    threaded = build_embedder(settings(threads=1, batch_size=8))
    assert isinstance(threaded, OnnxMiniLM) and threaded.threads == 1


def test_the_other_providers() -> None:
    assert isinstance(build_embedder(settings(provider="local-torch")), LocalMiniLM)
    assert isinstance(build_embedder(settings(provider="fake")), HashingEmbedder)
    with pytest.raises(ConfigError, match="needs RESOLVEFLOW_OPENAI_EMBEDDINGS_BASE_URL"):
        build_embedder(settings(provider="openai"))
