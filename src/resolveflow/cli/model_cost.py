"""The model an evaluation ran with and what it cost, for ``eval answers``, ``eval drafts`` and
``eval diagnoses`` (issue 30): the configured model wrapped in a ``MeteredModel`` for the run,
then one section printed (or one ``model`` key in ``--json``)."""

from __future__ import annotations

from typing import Any

from resolveflow.adapters.llm.metered import MeteredModel, ModelCost
from resolveflow.cli.output import fields, table
from resolveflow.llm.protocol import ChatModel


def metered(model: ChatModel | None) -> MeteredModel | None:
    """``model`` metered for the run (None stays None: provider ``none``)."""
    return None if model is None else MeteredModel(model)


def cost_json(model: MeteredModel | None) -> dict[str, Any]:
    if model is None:  # the same keys as a model's, so a script reads either
        return {
            "provider": "none",
            "model": None,
            "served_models": [],
            "calls": 0,
            "prompt_tokens": None,
            "completion_tokens": None,
            "purposes": [],
        }
    return model.cost().as_json()


def _tokens(value: int | None) -> str:
    return "not reported" if value is None else f"{value:,}"


def _pair(prompt: int | None, completion: int | None) -> str:
    if prompt is None and completion is None:
        return "not reported"
    return f"{_tokens(prompt)} / {_tokens(completion)}"


def render_cost(model: MeteredModel | None) -> None:
    if model is None:
        fields([("model", "none (RESOLVEFLOW_MODEL_PROVIDER=none): no model call")])
        return
    cost: ModelCost = model.cost()
    total = cost.usage()
    served = f" (served: {', '.join(cost.served_models)})" if cost.served_models else ""
    fields(
        [
            ("model", f"{cost.provider}/{cost.model}{served}"),
            ("calls", cost.calls),
            ("tokens in", _tokens(total.prompt_tokens)),
            ("tokens out", _tokens(total.completion_tokens)),
        ]
    )
    if cost.purposes:
        table(
            "model calls",
            ["purpose", "calls", "failed", "tokens in / out", "seconds median / max"],
            [
                (
                    p.purpose.value,
                    p.calls if p.requests == p.calls else f"{p.calls} ({p.requests} requests)",
                    ", ".join(f"{k} {v}" for k, v in p.failed.items()) or "0",
                    _pair(p.prompt_tokens, p.completion_tokens),
                    f"{p.median_seconds:.1f} / {p.max_seconds:.1f}",
                )
                for p in cost.purposes
            ],
        )
