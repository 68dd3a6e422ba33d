"""What a re-ranker does: reads a question beside each candidate text and scores how well the
text answers it (a cross-encoder reads both at once, where an embedder reads each alone)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Reranker(Protocol):
    def scores(self, question: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in ``texts``' order: higher reads as a better answer. Raw
        scores (logits); only their order and their logistic are meaningful."""
        ...
