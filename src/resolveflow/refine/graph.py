"""The refine graph: one node per step, in ``STEP_ORDER``; the state is the document as JSON.

No node pauses: refine proposes nothing by itself (a comment made of its Markdown goes through
the same proposal and approval path as any other). A critical error in a node stops the graph
and reaches the caller as it was raised; local problems are the document's ``warnings``.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from resolveflow.refine.domain.document import STEP_ORDER, RefineDocument, RefineStep
from resolveflow.refine.step_runner import StepDeps, run_step


class RefineState(TypedDict):
    document: dict[str, Any]  # a RefineDocument, as JSON


def _node(step: RefineStep, deps: StepDeps) -> Any:
    def run(state: RefineState) -> RefineState:
        doc = RefineDocument.model_validate(state["document"])
        return {"document": run_step(step, doc, deps).model_dump(mode="json")}

    return run


def build_refine_graph(
    deps: StepDeps, steps: tuple[RefineStep, ...] = STEP_ORDER
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """``steps`` is every step by default; a document that has been through some of them
    already continues with the rest."""
    graph = StateGraph(RefineState)
    previous = START
    for step in steps:
        graph.add_node(step.value, _node(step, deps))
        graph.add_edge(previous, step.value)
        previous = step.value
    graph.add_edge(previous, END)
    return graph.compile()


def refine_document(doc: RefineDocument, deps: StepDeps) -> RefineDocument:
    """Every step ``doc`` has not been through yet, in order."""
    todo = tuple(step for step in STEP_ORDER if step not in doc.done)
    if not todo:
        return doc
    final = build_refine_graph(deps, todo).invoke({"document": doc.model_dump(mode="json")})
    return RefineDocument.model_validate(final["document"])
