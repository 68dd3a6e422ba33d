"""A hit's relevance in [0, 1]: a calibrated reading of its cosine similarity. Pure.

For the local all-MiniLM-L6-v2 space the mapping is a logistic curve fitted on the SeaMonkey dev
pairs (docs/retrieval.md, "Relevance"): a hit with relevance r was a true duplicate of its query in
about r of the dev cases with that score. Later gates use it as a floor. For any other space there
is no calibration yet, and relevance is the cosine clipped to [0, 1] (documented as uncalibrated).
"""

from __future__ import annotations

import math

from resolveflow.adapters.embedder.protocol import EmbeddingSpace

# relevance = 1 / (1 + exp(-(SLOPE * cosine + INTERCEPT))), fitted once on dev, frozen here.
MINILM_SLOPE = 13.3
MINILM_INTERCEPT = -10.7
# The same model on ONNX Runtime is closer to the float model than torch's int8 was (median
# cosine 0.995 against fp32: docs/retrieval.md), so the curve fitted on torch's applies to it.
_CALIBRATED = {
    ("local", "sentence-transformers/all-MiniLM-L6-v2"),
    ("local", "sentence-transformers/all-MiniLM-L6-v2:onnx-int8"),
}


def is_calibrated(space: EmbeddingSpace) -> bool:
    return (space.provider, space.model) in _CALIBRATED


def relevance(space: EmbeddingSpace, cosine: float) -> float:
    if is_calibrated(space):
        return 1.0 / (1.0 + math.exp(-(MINILM_SLOPE * cosine + MINILM_INTERCEPT)))
    return min(1.0, max(0.0, cosine))
