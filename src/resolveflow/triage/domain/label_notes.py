"""A proposed label's rationale and confidence, as GitHub's issue API carries them beside it.

The rationale is the labels part's ``why`` (``triage/parts.py::label_part``) rewritten as one
plain sentence of at most 280 characters; when too long, whole listed words are dropped from its
end, never a word cut.

The confidence is a pure function of the part's score and floor and, when known, the measured
acceptance of its score band (the share of the team's decisions on suggestions of this kind in
that band that kept it):

- acceptance known: ``HIGH`` at 0.80 or more, ``MEDIUM`` at 0.50 or more, ``LOW`` below;
- otherwise the score's place between the floor and 1: ``HIGH`` from half-way up, ``MEDIUM``
  from a fifth of the way, ``LOW`` just above the floor (a part below its floor is never shown);
- no score at all (a rule's yes): ``MEDIUM``.

What the team did outranks what the model says: a band whose suggestions the team mostly
refused stays ``LOW`` whatever its probability.
"""

from __future__ import annotations

from resolveflow.domain.vocabulary import Confidence
from resolveflow.gate.domain.actions.intent import MAX_RATIONALE, LabelNote

HIGH_ACCEPTANCE = 0.80
MEDIUM_ACCEPTANCE = 0.50
HIGH_MARGIN = 0.5
MEDIUM_MARGIN = 0.2


def confidence_of(
    score: float | None, floor: float | None, acceptance: float | None = None
) -> Confidence:
    """``LOW``/``MEDIUM``/``HIGH`` for a kept part (see the module's docstring)."""
    if acceptance is not None:
        if acceptance >= HIGH_ACCEPTANCE:
            return Confidence.HIGH
        return Confidence.MEDIUM if acceptance >= MEDIUM_ACCEPTANCE else Confidence.LOW
    if score is None:
        return Confidence.MEDIUM
    base = floor if floor is not None and floor < 1.0 else 0.0
    margin = (score - base) / (1.0 - base)
    if margin >= HIGH_MARGIN:
        return Confidence.HIGH
    return Confidence.MEDIUM if margin >= MEDIUM_MARGIN else Confidence.LOW


def rationale_sentence(why: str, label: str) -> str:
    """``why`` as one sentence: clauses joined, capitalised, ending in a full stop, at most
    ``MAX_RATIONALE`` characters by dropping whole trailing list items (then whole words)."""
    clauses = [clause.strip() for clause in " ".join(why.split()).split(";") if clause.strip()]
    if not clauses:
        clauses = [f"the issue reads like others labelled '{label}' here"]
    text = ", and ".join(clauses)
    text = text[0].upper() + text[1:]
    while len(text) + 1 > MAX_RATIONALE and ", " in text:
        text = text.rsplit(", ", 1)[0]
    while len(text) + 1 > MAX_RATIONALE and " " in text:
        text = text.rsplit(" ", 1)[0]
    text = text.rstrip(" ,;:")[: MAX_RATIONALE - 1]
    return text if text.endswith(".") else text + "."


def label_note(
    label: str, why: str, score: float | None, floor: float | None, acceptance: float | None
) -> LabelNote:
    return LabelNote(
        label=label,
        rationale=rationale_sentence(why, label),
        confidence=confidence_of(score, floor, acceptance),
    )
