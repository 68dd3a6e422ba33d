"""The investigation's parameters, in a module of their own: ``config.py`` reads their defaults,
and it must not pay for importing the investigation itself (the model protocol, the stores)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InvestigationConfig:
    relevance_floor: float
    top_k: int = 5
    daily_model_calls: int = 200
    max_related: int = 5
