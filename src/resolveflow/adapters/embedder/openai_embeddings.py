"""Any OpenAI-compatible ``POST {base}/embeddings`` endpoint (OpenAI, vLLM, Ollama, llama.cpp).

Reads only, so a rate limit (429 with Retry-After) is waited out, bounded; any other failure is
raised as the matching provider error. Vectors are re-normalised here: not every server does it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from resolveflow.adapters.embedder.protocol import EmbeddingSpace, Vectors, normalize
from resolveflow.errors import (
    ProviderError,
    ProviderRateLimited,
    ProviderRejected,
    ProviderUnavailable,
)

logger = logging.getLogger(__name__)

MAX_RATE_LIMIT_WAITS = 5
MAX_WAIT_SECONDS = 60.0


class OpenAIEmbedder:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        dimensions: int | None = None,
        batch_size: int = 64,
        timeout_seconds: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=timeout_seconds,
            transport=transport,
        )
        self._model = model
        self._requested_dimensions = dimensions
        self._dimensions = dimensions
        self._batch_size = batch_size

    @property
    def space(self) -> EmbeddingSpace:
        if self._dimensions is None:
            # The server decides the size when none is requested: ask once.
            self._dimensions = int(self._request(["dimension probe"]).shape[1])
        return EmbeddingSpace("openai", self._model, self._dimensions)

    def close(self) -> None:
        self._client.close()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.space.dimensions), dtype=np.float32)
        parts = [
            self._request(list(texts[i : i + self._batch_size]))
            for i in range(0, len(texts), self._batch_size)
        ]
        return normalize(np.concatenate(parts))

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector

    def _request(self, texts: list[str]) -> Vectors:
        body: dict[str, Any] = {"model": self._model, "input": texts}
        if self._requested_dimensions is not None:
            body["dimensions"] = self._requested_dimensions
        for attempt in range(MAX_RATE_LIMIT_WAITS + 1):
            try:
                response = self._client.post("/embeddings", json=body)
            except httpx.TransportError as exc:
                raise ProviderUnavailable(
                    f"embeddings endpoint unreachable: {type(exc).__name__}"
                ) from exc
            if response.status_code == 429 and attempt < MAX_RATE_LIMIT_WAITS:
                wait = _retry_after(response)
                logger.warning("embeddings rate limited", extra={"wait_seconds": wait})
                time.sleep(wait)
                continue
            return self._parse(response, len(texts))
        raise ProviderRateLimited(  # pragma: no cover - the loop returns or raises first
            "embeddings endpoint kept rate limiting", retry_after_seconds=MAX_WAIT_SECONDS
        )

    def _parse(self, response: httpx.Response, expected: int) -> Vectors:
        status = response.status_code
        if status == 429:
            raise ProviderRateLimited(
                "embeddings endpoint rate limited the request",
                retry_after_seconds=_retry_after(response),
            )
        if 400 <= status < 500:
            raise ProviderRejected(
                f"embeddings endpoint refused ({status}): {response.text[:200]}", status=status
            )
        if status >= 500:
            raise ProviderError(f"embeddings endpoint failed ({status})")
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderError("embeddings endpoint answered with an unexpected body") from exc
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise ProviderError(
                f"embeddings endpoint returned {vectors.shape[0]} vectors for {expected} texts"
            )
        if self._dimensions is not None and vectors.shape[1] != self._dimensions:
            raise ProviderError(
                f"embeddings endpoint returned {vectors.shape[1]} dimensions, "
                f"expected {self._dimensions}"
            )
        return vectors


def _retry_after(response: httpx.Response) -> float:
    try:
        return min(MAX_WAIT_SECONDS, max(0.0, float(response.headers.get("retry-after", "1"))))
    except ValueError:
        return 1.0
