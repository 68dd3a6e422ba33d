"""Which of the past replies to similar requests to reuse: the one the others agree with.

The closest past request is not always the best example: its reply may answer a detail of that
case. Among the ``CONSENSUS_K`` most similar exchanges, the reply that says most of what the other
replies say (token F1 of content words, ``overlap``, each other reply weighted by its relevance)
is the mailbox's usual answer to such a request; it is reused first. Its ``agreement`` also says
how sure the drafter can be: when the similar requests were each answered differently, no reply
is the usual answer, and the drafter asks the reviewer to confirm the one it reused
(``draft.AGREEMENT_FLOOR``). With fewer than ``CONSENSUS_K`` similar exchanges there is no
consensus to ask: the examples stay in order of relevance, their agreement unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from resolveflow.mail.domain.draft import reusable_text
from resolveflow.mail.domain.message import MailExample
from resolveflow.mail.domain.overlap import reply_words, token_f1

CONSENSUS_K = 5


def by_agreement(examples: Sequence[MailExample]) -> list[MailExample]:
    """``examples`` (best first by relevance) with the first ``CONSENSUS_K`` given their
    agreement and the most agreed-upon of them first (the more relevant on a tie); the rest
    follow as they were."""
    if len(examples) < CONSENSUS_K:
        return list(examples)
    head = list(examples[:CONSENSUS_K])
    replies = [reply_words(reusable_text(e.reply_text)) for e in head]
    weights = [max(e.score, 1e-6) for e in head]
    scored: list[MailExample] = []
    for i, example in enumerate(head):
        others = [j for j in range(len(head)) if j != i]
        total = sum(weights[j] for j in others)
        agreed = sum(weights[j] * token_f1(replies[i], replies[j]) for j in others) / total
        scored.append(replace(example, agreement=round(agreed, 6)))
    first = max(range(len(scored)), key=lambda i: (scored[i].agreement or 0.0, -i))
    return [
        scored[first],
        *(e for i, e in enumerate(scored) if i != first),
        *examples[CONSENSUS_K:],
    ]
