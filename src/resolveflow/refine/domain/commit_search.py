"""Which past commits read like a ticket: BM25 over their messages. Pure.

A repository's git history serves as its past tasks when no tracker is indexed; its commits are
searched here by their words (``text.terms``: identifiers whole, common words left out), in
memory, with no index. The few best are then placed by meaning (``refine/history_tasks.py``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from resolveflow.refine.domain.text import terms

BM25_K1 = 1.2  # the textbook values: commit messages are short, none was tuned here
BM25_B = 0.75


def rank_texts(query: str, texts: Sequence[str]) -> list[tuple[int, float]]:
    """(index, BM25 score) of each text sharing a word with ``query``, best first (ties: the
    later text, the newer commit, first)."""
    docs = [Counter(terms(text)) for text in texts]
    wanted = set(terms(query))
    if not docs or not wanted:
        return []
    average = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    frequency = Counter(word for d in docs for word in wanted & d.keys())
    idf = {w: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for w, n in frequency.items()}
    scored = []
    for at, doc in enumerate(docs):
        length = sum(doc.values())
        score = 0.0
        for word in wanted & doc.keys():
            tf = doc[word]
            norm = tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average)
            score += idf[word] * tf * (BM25_K1 + 1) / norm
        if score > 0:
            scored.append((at, score))
    return sorted(scored, key=lambda pair: (-pair[1], -pair[0]))
