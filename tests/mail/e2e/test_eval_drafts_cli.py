"""``resolveflow eval drafts`` through the command line (``InProcessCli``): on the synthetic
mailbox of ``test_mail_eval`` (the printed figures and their targets, a one-line error), and on
the real help mailbox of ``mail-rhelp-dev`` (the data tier: the output's shape, every figure in
its range, the dev targets met)."""

from __future__ import annotations

from pathlib import Path

from test_mail_eval import MAILBOX, write_mailbox

from fixtures_cli import Cli, InProcessCli

RHELP = "helper@r-help-dev.example"
FIGURES = (
    "example_reply_f1",
    "random_reply_f1",
    "best_reply_f1",
    "draft_f1",
    "complete_share",
    "confidently_wrong",
    "confidently_wrong_of_complete",
    "reused_share",
)


def test_the_figures_are_printed_beside_their_targets(cli: Cli, tmp_path: Path) -> None:
    past, incoming = write_mailbox(tmp_path)
    run = InProcessCli({**cli.env, "RESOLVEFLOW_EMBEDDER": "fake"})
    args = ("eval", "drafts", "--mailbox", MAILBOX, "--past", str(past), "--incoming")
    printed = run.run(*args, str(incoming)).stdout
    for line in ("3 evaluated of 4", "example_reply_f1", "random past reply", "best past reply",
                 "complete_share", "confidently_wrong", "credential_request", "dev targets",
                 "<= 0.05", "failing a check", "no model call"):  # fmt: skip
        assert line in printed, printed
    data = run.json(*args, str(incoming))
    assert data["evaluated"] == 3 and data["targets"]["confidently_wrong"]["met"] is False
    assert data["model"]["provider"] == "none" and data["model_share"] == 0.0
    assert [d["id"] for d in data["drafts"]] == ["q1", "q2", "q3"]
    run.fails(*args, str(tmp_path / "none.jsonl"), match="no such file")


def test_eval_drafts_on_the_help_mailbox(cli: Cli, shared_data: Path) -> None:
    data_set = shared_data / "mail-rhelp-dev"
    run = InProcessCli(dict(cli.env))  # the default embedder, as an operator would run it
    data = run.json(
        "eval", "drafts", "--mailbox", RHELP, "--past", str(data_set / "past.mbox"),
        "--incoming", str(data_set / "incoming.jsonl"),
    )  # fmt: skip
    assert data["lines"] == 218 and data["evaluated"] == 166  # question and follow-up lines
    assert data["past_replies"] > 250
    for name in FIGURES:
        assert 0.0 <= data[name] <= 1.0, (name, data[name])
    # The chosen example is one of the past replies: never above the best of them.
    assert data["random_reply_f1"] <= data["best_reply_f1"]
    assert data["example_reply_f1"] <= data["best_reply_f1"]
    assert data["confidently_wrong"] <= data["complete_share"]
    assert len(data["drafts"]) == data["evaluated"]
    assert sum(d["complete"] for d in data["drafts"]) == round(
        data["complete_share"] * data["evaluated"]
    )
    for draft in data["drafts"]:
        assert draft["example_reply_f1"] <= draft["best_reply_f1"] + 1e-9
        assert draft["complete"] == (not draft["placeholders"] and not draft["failed_checks"])
    targets = data["targets"]
    assert set(targets) == {"example_reply_f1", "confidently_wrong"}
    assert all(t["met"] for t in targets.values()), targets
