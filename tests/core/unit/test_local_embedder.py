"""LocalMiniLM (the ``local-torch`` provider): a text's vector does not depend on its batch."""

from __future__ import annotations

import numpy as np
import pytest

from resolveflow.adapters.embedder.local import LocalMiniLM

TEXTS = [
    "Crash when opening a project with an empty settings file",
    "",
    "Prometheus target down for the payments service",
    " ".join(["The upload fails with a 502 from the gateway after about thirty seconds."] * 12),
    "Why is the build red on main?",
]


def test_quantized_vectors_are_the_same_alone_and_in_a_batch() -> None:
    # torch's dynamic quantization scales activations per run: batched, a text's vector moved
    # with its neighbours (cosine 0.965 seen). Quantized, it embeds one text per run.
    pytest.importorskip("sentence_transformers")
    model = LocalMiniLM(batch_size=16)
    together = model.embed_documents(TEXTS)
    alone = np.stack([model.embed_query(text) for text in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_the_float_model_batches_and_agrees_with_itself_alone() -> None:
    pytest.importorskip("sentence_transformers")
    model = LocalMiniLM(quantize=False, batch_size=16)
    together = model.embed_documents(TEXTS)
    alone = np.stack([model.embed_query(text) for text in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-4)
