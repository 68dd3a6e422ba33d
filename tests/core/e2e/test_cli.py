"""The CLI end to end: real processes, real Postgres, the fake GitHub over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fixtures_cli import Cli, _setup, one_line_error
from resolveflow.sandbox.forge.server import FakeGitHubServer


def test_worked_example_from_the_readme(
    cli: Cli, fake_github: FakeGitHubServer, tmp_path: Path
) -> None:
    rita, alex = _setup(cli)
    comment = tmp_path / "reply.md"
    comment.write_text("Thanks! Could you share `datasets-cli env`?\n", encoding="utf-8")
    created = cli.json(
        "proposals",
        "create",
        "--repo",
        "acme/widgets",
        "--issue",
        "1",
        "--comment-file",
        str(comment),
        "--label",
        "bug",
        token=rita,
    )
    assert set(created) >= {"id", "digest"}
    shown = cli.run("proposals", "show", created["id"], token=alex).stdout
    assert created["digest"] in shown and "resolveflow approve" in shown

    approved = cli.json("approve", created["id"], "--digest", created["digest"], token=alex)
    assert approved["execution_state"] == "pending"
    assert cli.json("execute", "--once") == {"processed": 1}
    assert cli.json("execute", "--once") == {"processed": 0}

    execution = cli.json("executions", "show", approved["execution_id"], token=alex)
    assert execution["id"] == approved["execution_id"]
    assert execution["state"] == "sent"
    assert execution["proposal_id"] == created["id"]
    assert [e["event"] for e in execution["timeline"]][:2] == [
        "proposal.created",
        "proposal.approved",
    ]
    [listed] = cli.json("executions", "list", token=alex)
    assert listed["target"] == "acme/widgets#1"
    [posted] = fake_github.comments("acme/widgets", 1)
    assert posted["body"].startswith("Thanks! Could you share `datasets-cli env`?")
    assert fake_github.issue_labels("acme/widgets", 1) == ["bug"]
    assert cli.json("reconcile") == []


def test_db_commands_are_idempotent(cli: Cli) -> None:
    assert cli.json("db", "upgrade") == {"applied": []}
    migrations = cli.json("db", "status")
    assert [m["version"] for m in migrations][:2] == ["0001", "0002"]
    assert all(m["applied_at"] and not m["modified"] for m in migrations)


def test_reject_and_edit_from_the_cli(cli: Cli) -> None:
    rita, alex = _setup(cli)
    created = cli.json(
        "proposals",
        "create",
        "--repo",
        "acme/widgets",
        "--issue",
        "1",
        "--label",
        "bug",
        token=rita,
    )
    edited = cli.json("proposals", "edit", created["id"], "--label", "question", token=rita)
    assert edited["version"] == 2 and edited["digest"] != created["digest"]
    rejected = cli.json("reject", edited["id"], "--reason", "wrong label", token=alex)
    assert rejected["decision"] == "rejected"
    cli.fails(
        "approve", edited["id"], "--digest", edited["digest"], token=alex, match="already rejected"
    )


def test_malformed_input_gives_one_clear_line(cli: Cli, tmp_path: Path) -> None:
    rita, alex = _setup(cli)
    unknown = "00000000-0000-0000-0000-000000000000"
    cli.fails("approve", unknown, "--digest", "xyz", token=alex, match="64 hexadecimal")
    cli.fails("approve", unknown, "--digest", "a" * 64, token=alex, match="no proposal")
    cli.fails("approve", "not-an-id", "--digest", "a" * 64, token=alex, match="not a valid id")
    cli.fails("proposals", "show", unknown, token="rf_garbage", match="malformed")
    cli.fails("proposals", "show", unknown, token=rita[:-4] + "AAAA", match="not valid")
    cli.fails("proposals", "show", unknown, match="no API token")
    cli.fails(
        "proposals",
        "create",
        "--repo",
        "acme/widgets",
        "--issue",
        "1",
        "--comment-file",
        str(tmp_path / "missing.md"),
        token=rita,
        match="no such file",
    )
    cli.fails(
        "proposals",
        "create",
        "--repo",
        "evil/repo",
        "--issue",
        "1",
        "--label",
        "bug",
        token=rita,
        match="not on this tenant's allowlist",
    )
    cli.fails(
        "proposals",
        "create",
        "--repo",
        "acme/widgets",
        "--issue",
        "1",
        token=rita,
        match="needs a comment, labels, or both",
    )
    cli.fails(
        "executions",
        "resolve",
        unknown,
        "--was-sent",
        "--not-sent",
        token=alex,
        match="exactly one",
    )
    cli.fails("principals", "add", "--subject", "x", "--role", "king", match="--role must be")
    cli.fails("tenants", "add", "acme", match="already exists")


def test_unreachable_database_is_one_line(cli: Cli) -> None:
    cli.env["RESOLVEFLOW_DATABASE_URL"] = "postgresql://nobody@127.0.0.1:1/none"
    cli.fails("tenants", "list", match="unreachable")
    cli.env["RESOLVEFLOW_GITHUB_API_URL"] = "ftp://nowhere"
    cli.fails("tenants", "list", match="RESOLVEFLOW_GITHUB_API_URL")


def test_sixteen_executor_processes_race_for_one_action(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    rita, alex = _setup(cli)
    for round_number in range(2):
        created = cli.json(
            "proposals",
            "create",
            "--repo",
            "acme/widgets",
            "--issue",
            "1",
            "--comment",
            f"process race {round_number}",
            token=rita,
        )
        cli.json("approve", created["id"], "--digest", created["digest"], token=alex)
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "resolveflow", "execute", "--once", "--json"],
                env=cli.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(16)
        ]
        outputs = [worker.communicate(timeout=180) for worker in workers]
        assert all(worker.returncode == 0 for worker in workers), [err for _, err in outputs]
        processed = sum(json.loads(out)["processed"] for out, _ in outputs)
        assert processed == 1
    assert fake_github.writes_received == 2
    assert len(fake_github.comments("acme/widgets", 1)) == 2


def test_text_that_looks_like_markup_is_shown_exactly(cli: Cli) -> None:
    rita, alex = _setup(cli)
    text = "Use [red]x[/red] and [link=http://evil]here[/link] :smile: [test (unit, 3.8)]"
    created = cli.json(
        "proposals",
        "create",
        "--repo",
        "acme/widgets",
        "--issue",
        "1",
        "--comment",
        text,
        token=rita,
    )
    shown = cli.run("proposals", "show", created["id"], token=alex).stdout
    assert text in shown
    assert f"resolveflow approve {created['id']} --digest {created['digest']}" in shown


def test_policy_check_accepts_the_documented_example_and_names_errors(
    cli: Cli, tmp_path: Path
) -> None:
    import re

    doc = (Path(__file__).resolve().parents[3] / "docs" / "triage.md").read_text()
    example = re.search(r"```toml\n(.*?)```", doc, re.DOTALL)
    assert example is not None
    good = tmp_path / "policy.toml"
    good.write_text(example.group(1))
    checked = cli.json("policy", "check", str(good), "--repo", "huggingface/datasets")
    assert checked["effective"]["rules"][0]["name"] == "docs"
    bad = tmp_path / "bad.toml"
    bad.write_text('[defaults]\nci_lable = "x"\n')
    cli.fails("policy", "check", str(bad), match="defaults.ci_lable")


def test_policy_check_names_a_policy_nested_too_deeply(cli: Cli, tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"  # tomllib recursed out of stack: "unexpected RecursionError"
    deep.write_text("[defaults]\nx = " + "[" * 3000 + "]" * 3000 + "\n")
    cli.fails("policy", "check", str(deep), match="deep.toml: not valid TOML: nested too deeply")


def test_triage_of_an_issue_that_does_not_exist_is_one_line_and_leaves_no_run(cli: Cli) -> None:
    rita, _ = _setup(cli)
    result = cli.run("triage", "acme/widgets#9999", token=rita, ok=False)
    assert result.returncode == 3, result.stderr  # not found (docs/errors.md)
    line = one_line_error(result, "acme/widgets#9999 does not exist (or the token cannot see it)")
    assert line.count("404") == 1, line
    assert cli.json("runs", "list", token=rita) == []  # no failed run left behind
