"""Commands of the investigation work: ``backtest``, ``eval safety``, ``eval floor`` and
``eval diagnoses``.

``register(app)`` adds ``backtest`` to the main app; ``add_eval_commands(eval_app)`` adds the
three evaluations to the existing ``eval`` group.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from resolveflow.bootstrap.app import build_model, investigation_config, search_params
from resolveflow.bootstrap.embedder import build_embedder
from resolveflow.cli import common
from resolveflow.cli.output import console, emit, fields, table
from resolveflow.errors import InvalidInput
from resolveflow.evals.floor import calibrate
from resolveflow.policy_file import parse_policy
from resolveflow.retrieval.sources import parse_time, read_pairs
from resolveflow.triage.backtest import read_fix_links, run_backtest
from resolveflow.triage.backtest_report import BacktestReport
from resolveflow.triage.backtest_truth import check_docs, read_clone


def register(app: typer.Typer) -> None:
    app.command("backtest")(backtest)


def add_eval_commands(eval_app: typer.Typer) -> None:
    eval_app.command("safety")(eval_safety)
    eval_app.command("floor")(eval_floor)
    eval_app.command("diagnoses")(eval_diagnoses)


def eval_safety(
    with_model: bool = typer.Option(
        False,
        "--with-model",
        help="Then the configured model answers the same hostile inputs; its invariants checked.",
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Scripted compromised-model cases the code must stop; anything below 100% fails."""
    from resolveflow.cli.model_cost import cost_json, render_cost
    from resolveflow.cli.planner_safety import full_safety_report  # the planner's cases too

    report, model = full_safety_report(with_model)
    data = report.as_json()
    if with_model:
        data["model"] = cost_json(model)

    def render() -> None:
        fields([("passed", f"{report.passed} of {report.total}")])
        for failure in report.failures:
            console.print(Text(f"FAILED {failure['case']}: " + "; ".join(failure["problems"])))
        if with_model:
            render_cost(model)

    emit(data, as_json, render)
    if report.passed != report.total:
        raise typer.Exit(1)


def eval_floor(
    corpus: Path = typer.Option(..., "--corpus", help="JSONL corpus."),
    pairs: Path = typer.Option(..., "--pairs", help="TSV of related (duplicate) pairs."),
    negatives: Path | None = typer.Option(
        None, "--negatives", help="Another corpus: its best hits here are real but unrelated."
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Relevance of related pairs, random pairs and another corpus's best hits, per floor."""
    result = calibrate(build_embedder(common.settings()), corpus, pairs, negatives)

    def render() -> None:
        names = list(result["distributions"])
        table(
            f"share at or above each floor ({result['space']})",
            ["floor", *names],
            [[row["floor"], *(row[n] for n in names)] for row in result["share_at_or_above"]],
        )

    emit(result, as_json, render)


def eval_diagnoses(
    corpus: list[Path] = typer.Option(
        ..., "--corpus", help="JSONL corpus (repeat for issues and pull requests)."
    ),
    duplicates: Path | None = typer.Option(
        None, "--duplicates", help="TSV id_a<TAB>id_b: pairs of duplicate reports."
    ),
    fix_links: Path | None = typer.Option(
        None, "--fix-links", help="TSV issue<TAB>pr: which pull request fixed which issue."
    ),
    limit: int | None = typer.Option(
        20, "--limit", min=1, help="At most N issues, oldest first (a model call or two each)."
    ),
    items: bool = typer.Option(False, "--items", help="Include every diagnosed issue (JSON)."),
    as_json: bool = common.JsonOption,
) -> None:
    """Diagnose past issues whose duplicate or fix is known, with the configured model: escalated,
    written by the model, the known issue shown and cited, severity; and what the model cost."""
    from resolveflow.cli.model_cost import cost_json, metered, render_cost
    from resolveflow.retrieval.sources import read_pairs
    from resolveflow.triage.diagnosis_evaluation import evaluate_diagnoses

    if duplicates is None and fix_links is None:
        raise InvalidInput("give --duplicates or --fix-links (or both): what is known of the past")
    pairs = read_pairs(duplicates) if duplicates else []
    # Two issues fixed by one pull request relate only if it was merged: it did fix them.
    links = read_fix_links(fix_links, merged_only=True) if fix_links else None
    with common.app() as opened:
        model = metered(opened.model())
        result, outcomes = evaluate_diagnoses(
            opened.db,
            build_embedder(opened.settings),
            corpus,
            duplicates=pairs,
            fix_links=links,
            model=model,
            config=investigation_config(opened.settings),
            params=search_params(opened.settings),
            limit=limit,
        )
    data = {**result.as_json(), "model": cost_json(model)}
    if items:
        data["items"] = [o.as_json() for o in outcomes]

    def render() -> None:
        fields(
            [
                ("issues diagnosed", f"{result.cases} ({result.duplicate_cases} duplicates)"),
                ("escalated", f"{result.escalated:.1%}"),
                ("written by the model", f"{result.model_wrote:.1%}"),
                ("known issue shown", f"{result.known_retrieved:.1%}"),
                ("known issue cited", f"{result.cited_known:.1%}"),
                ("  of those shown", f"{result.cited_known_of_retrieved:.1%}"),
                ("duplicate named", f"{result.duplicate_named:.1%} of the duplicates"),
                ("severity", ", ".join(f"{k} {v}" for k, v in result.severity.items())),
                ("severity sane", _sane(result.severity_sane, result.request_like)),
                ("failed gates", ", ".join(f"{k} {v}" for k, v in result.failed_gates.items())),
            ]
        )
        render_cost(model)

    emit(data, as_json, render)


def _sane(share: float | None, requests: int) -> str:
    if share is None:
        return "no request, question or documentation issue diagnosed"
    return f"{share:.1%} of {requests} requests not high"


def backtest(
    corpus: list[Path] = typer.Option(
        ..., "--corpus", help="JSONL corpus (repeat for issues and pull requests)."
    ),
    since: str = typer.Option(..., "--since", help="Replay the issues created from DATE on."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most N issues."),
    fix_links: Path | None = typer.Option(
        None, "--fix-links", help="TSV issue<TAB>pr: which pull request fixed which issue."
    ),
    policy_file: Path | None = typer.Option(None, "--policy", help="A triage policy (TOML)."),
    fit_before: str | None = typer.Option(
        None,
        "--fit-before",
        help="Fit the duplicate floor from the issues before DATE, measure it on those after.",
    ),
    duplicates: Path | None = typer.Option(
        None, "--duplicates", help="TSV id_a<TAB>id_b: pairs of duplicate reports."
    ),
    clone: Path | None = typer.Option(
        None, "--clone", help="A git clone of the repository: the files each fix changed."
    ),
    docs: Path | None = typer.Option(
        None, "--docs", help="The team's documents (a folder): indexed, they answer questions."
    ),
    items: bool = typer.Option(
        False, "--items", help="Include every replayed issue, and examples of each part."
    ),
    as_json: bool = common.JsonOption,
) -> None:
    """Replay triage on past issues in shadow mode (nothing is proposed or sent) and measure each
    part of what it would have proposed against what the maintainers did."""
    moment = parse_time(since, where="--since")
    if moment is None:
        raise InvalidInput("--since needs a date such as 2023-01-01")
    split = parse_time(fit_before, where="--fit-before") if fit_before else None
    if split is not None and split <= moment:
        raise InvalidInput("--fit-before must come after --since: decisions first, then measure")
    if split is not None and duplicates is None and fix_links is None:
        raise InvalidInput("--fit-before needs --duplicates or --fix-links: what a team approved")
    links = read_fix_links(fix_links) if fix_links else None
    pairs = read_pairs(duplicates) if duplicates else None
    folder = check_docs(docs) if docs else None
    history = read_clone(clone) if clone else None
    policy = None
    if policy_file is not None:
        try:
            policy = parse_policy(policy_file.read_text(encoding="utf-8"), str(policy_file))
        except OSError as exc:
            raise InvalidInput(f"cannot read {policy_file}: {exc.strerror}") from None
    from resolveflow.bootstrap.triage_docs import ask_docs  # Ask's imports: only when replaying

    with common.app() as opened:
        settings = opened.settings
        model = build_model(settings)
        try:
            report = run_backtest(
                opened.db,
                build_embedder(settings),
                corpus,
                moment,
                limit=limit,
                fix_links=links,
                model=model,
                config=investigation_config(settings),
                params=search_params(settings),
                policy=policy,
                fit_before=split,
                duplicates=pairs,
                merged_fix_links=read_fix_links(fix_links, merged_only=True) if fix_links else None,
                history=history,
                docs=folder,
                docs_answerer=partial(ask_docs, opened.db),
            )
        finally:
            close = getattr(model, "close", None)
            if callable(close):
                close()
    emit(report.as_json(items=items), as_json, lambda: _render(report, items))


def _render(report: BacktestReport, items: bool = False) -> None:
    data = report.as_json(items=items)
    labels, fixes = data["labels"], data["fix_links"]
    rows: list[tuple[str, object]] = [
        ("replayed", data["replayed"]),
        ("model", data["provider"]),
        ("classification", ", ".join(f"{k} {v}" for k, v in data["classification"].items())),
        ("proposal rate", f"{_share(data['proposal_rate'])} ({data['proposals']})"),
        (
            "escalation rate",
            f"{data['escalation_rate']:.1%} of {data['investigated']} investigated",
        ),
        ("label precision", f"{labels['precision']:.1%}"),
        ("label recall", f"{labels['recall']:.1%}"),
        ("abstained", labels["abstained"]),
    ]
    if fixes is not None:
        rows.append(
            ("cited issue fixed by the same PR", f"{fixes['rate']:.1%} of {fixes['issues']} issues")
        )
    fields(rows + _figure_rows(data))
    _render_parts(data["parts"])
    for note in data["notes"]:
        console.print(Text(f"note: {note}"))
    if report.floor is not None:
        _render_floor(report.floor.as_json())


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _figure_rows(data: dict[str, Any]) -> list[tuple[str, object]]:
    """The figures a team would judge the proposal by."""
    helped, wrong, timing = data["helped"], data["wrong"], data["seconds_per_issue"]
    per_100 = data["wrong_per_100"]
    by_part = ", ".join(f"{k} {v}" for k, v in wrong.items() if k != "total")
    inputs = data["inputs"]
    return [
        (
            "helped share",
            f"{_share(data['helped_share'])} ({helped['issues']} of "
            f"{helped['with_ground_truth']} issues with ground truth)",
        ),
        ("wrong per 100", f"{'n/a' if per_100 is None else per_100} ({by_part})"),
        (
            "seconds per issue",
            f"median {timing['median']}, p95 {timing['p95']} "
            f"(indexing the corpus: {data['index_seconds']} s)",
        ),
        ("clone", inputs["clone"] or "none"),
        ("docs", inputs["docs"] or "none"),
    ]


def _render_parts(parts: dict[str, Any]) -> None:
    labels, dups, files, related = (
        parts["labels"], parts["duplicates"], parts["files"], parts["related"]
    )  # fmt: skip
    rows: list[tuple[str, str]] = [
        (
            "labels",
            f"precision {_share(labels['precision'])}, recall {_share(labels['recall'])}, "
            f"coverage {_share(labels['coverage'])} of {labels['labelled_issues']} labelled",
        ),
        (
            "duplicates",
            f"precision {_share(dups['precision'])}, recall {_share(dups['recall'])} "
            f"({dups['flags']} flags: {dups['right']} right, {dups['wrong']} wrong, "
            f"{dups['unverified']} unverified; known pairs {dups['known_pairs']})",
        ),
        ("files", f"Hit@5 {_share(files['hit@5'])} of {files['fixed_issues']} fixed issues"),
        (
            "related",
            f"{_share(related['share'])} of {related['issues_with_known_related']} issues with "
            "a known duplicate or same-fix issue cite one",
        ),
    ]
    for name in ("missing_facts", "docs", "failing_checks"):
        examples = parts[name].get("examples", [])
        shown = "; ".join(f"#{e['issue']}: {', '.join(e['items'])}" for e in examples)
        rows.append((name, f"{parts[name]['count']} issues" + (f" ({shown})" if shown else "")))
    table("parts", ["part", "figures"], rows)


def _render_floor(floor: dict[str, Any]) -> None:
    """The fitted duplicate floor beside the default, on the issues after the split."""
    fitted, default, mine = floor["fitted"], floor["default"], floor["fitted_floor"]
    table(
        f"duplicate floor fitted from {floor['decision_issues']} issues before "
        f"{floor['fit_before'][:10]}, measured on the {floor['measured_issues']} after",
        ["floor", "value", "suggestions", "precision", "recall", "target"],
        [
            ("default", default["floor"], default["suggestions"], default["precision"], 1.0, ""),
            (
                "fitted",
                mine["floor"],
                mine["suggestions"],
                mine["precision"],
                mine["recall"],
                f"recall >= {floor['recall_floor']} "
                + ("met" if floor["recall_held"] else "NOT met"),
            ),
        ],
    )
    console.print(fitted["why"])


__all__ = ["add_eval_commands", "register"]
