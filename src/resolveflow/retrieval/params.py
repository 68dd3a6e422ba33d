"""The search parameters, in a module of their own: ``config.py`` reads their defaults, and it must
not pay for importing the search itself (the database layer, the embedder protocol, numpy)."""

from __future__ import annotations

from dataclasses import dataclass, field

from resolveflow.retrieval.fusion import FusionParams


@dataclass(frozen=True)
class SearchParams:
    fusion: FusionParams = field(default_factory=FusionParams)
    candidates: int = 30  # chunks taken from each branch before fusion (at least 3 x k)
    exact_max_chunks: int = 20_000
    ef_search_min: int = 64
    ef_search_max: int = 1000
    max_terms: int = 24  # the rarest query terms the full-text branch ORs together
    max_term_share: float = 0.05  # terms in more of the tenant's chunks than this are left out
    max_postings: int = 3_000  # rarest terms first, while their postings add up to at most this
