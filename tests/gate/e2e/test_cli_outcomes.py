"""Commands whose work failed exit non-zero and say what failed (issue 12, item 6), and the text
output prints what exists (items 11 and 13): real processes, real Postgres, the sandbox forge."""

from __future__ import annotations

from fixtures_cli import Cli, _setup
from resolveflow.sandbox.forge.server import FakeGitHubServer


def _propose(cli: Cli, token: str, *what: str) -> dict[str, str]:
    return cli.json(  # type: ignore[no-any-return]
        "proposals", "create", "--repo", "acme/widgets", "--issue", "1", *what, token=token
    )


def test_execute_without_a_github_token_refuses_up_front_and_leaves_the_approval_queued(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    rita, alex = _setup(cli)
    created = _propose(cli, rita, "--comment", "posted once a token is set")
    approved = cli.json("approve", created["id"], "--digest", created["digest"], token=alex)
    del cli.env["RESOLVEFLOW_GITHUB_TOKEN"]
    requests_before = fake_github.requests_received

    result = cli.run("execute", "--once", ok=False)
    assert result.returncode == 7, result.stderr  # configuration
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("error: ") and "set RESOLVEFLOW_GITHUB_TOKEN" in line, line
    assert approved["execution_id"] in line and "approved by alex" in line, line
    assert fake_github.requests_received == requests_before  # not even an unauthenticated call
    waiting = cli.json("executions", "show", approved["execution_id"], token=alex)
    assert (waiting["state"], waiting["attempts"]) == ("pending", [])

    cli.env["RESOLVEFLOW_GITHUB_TOKEN"] = "service-token"
    assert cli.json("execute", "--once") == {"processed": 1}
    assert cli.json("executions", "show", approved["execution_id"], token=alex)["state"] == "sent"
    assert len(fake_github.comments("acme/widgets", 1)) == 1


def test_execute_names_the_executions_that_failed_and_exits_non_zero(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    rita, alex = _setup(cli)
    good = _propose(cli, rita, "--comment", "this one is posted")
    bad = _propose(cli, rita, "--label", "question")
    approvals = [
        cli.json("approve", p["id"], "--digest", p["digest"], token=alex) for p in (good, bad)
    ]
    # Gone between approval (which checks it) and execution (which checks it again): fails.
    fake_github.remove_repo_label("acme/widgets", "question")
    result = cli.run("execute", "--once", ok=False)
    assert result.returncode == 6, result.stderr  # unavailable (docs/cli.md)
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    failed = approvals[1]["execution_id"]
    assert line.startswith("error: 1 of 2 executed executions did not complete"), line
    assert f"{failed} failed" in line and "question" in line, line
    assert approvals[0]["execution_id"] not in line
    assert "processed 2 executions" in result.stdout
    assert approvals[0]["execution_id"] in result.stdout and failed in result.stdout
    assert len(fake_github.comments("acme/widgets", 1)) == 1
    assert cli.json("execute", "--once") == {"processed": 0}  # nothing left: exit 0 again


def test_triage_of_an_issue_that_does_not_exist_is_not_found(cli: Cli) -> None:
    rita, _ = _setup(cli)
    result = cli.run("triage", "acme/widgets#999", token=rita, ok=False)
    assert result.returncode == 3, (result.stdout, result.stderr)  # not found
    assert result.stdout == ""
    [last] = result.stderr.strip().splitlines()  # one line: the failed call is not logged twice
    assert last.startswith("error: ") and "acme/widgets#999" in last and "404" in last, last
    assert "Traceback" not in result.stderr
    as_json = cli.run("triage", "acme/widgets#999", "--json", token=rita, ok=False)
    assert as_json.returncode == 3


def test_approve_prints_only_what_exists(cli: Cli) -> None:
    rita, alex = _setup(cli)
    created = _propose(cli, rita, "--label", "bug")
    out = cli.run("approve", created["id"], "--digest", created["digest"], token=alex).stdout
    lines = out.splitlines()
    assert all(len(line.split()) >= 2 for line in lines if line.strip()), out
    assert not any(line.startswith(("written", "run ")) for line in lines), out
    assert "resolveflow execute --once" in out
    [execution] = [line.split()[1] for line in lines if line.startswith("execution")]
    shown = cli.run("executions", "show", execution, token=alex).stdout
    assert "attempts: none yet" in shown and "credential" not in shown, shown


def test_principals_add_quiet_prints_only_the_token(cli: Cli) -> None:
    cli.json("tenants", "add", "acme")
    result = cli.run("principals", "add", "--subject", "rita", "--role", "requester", "--quiet")
    token = result.stdout
    assert token.endswith("\n") and token.count("\n") == 1, repr(token)
    assert token.strip().startswith("rf_") and " " not in token.strip(), repr(token)
    assert result.stderr == ""
    assert cli.json("proposals", "list", token=token.strip()) == []


def test_runs_show_prints_the_facts_and_approve_runs_the_pages_label_check(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    rita, alex = _setup(cli)
    started = cli.json("triage", "acme/widgets#1", token=rita)
    run = started["run_id"]
    shown = cli.run("runs", "show", run[:8], token=alex).stdout
    # The facts and the rule in the pages' words (issue 29); --json keeps their names.
    assert "evidence facts" in shown and "the report is too short to act on" in shown, shown
    assert "CI is failing" in shown and "none of 0 check runs failed" in shown, shown
    assert "is_information_sparse" not in shown and "has_failing_ci" not in shown, shown
    assert started["rule"] == "is_information_sparse"
    assert "rule            the report is too short to act on: " in shown, shown
    assert "\nbranch          \n" not in shown and "\ndigest          \n" not in shown

    # The same named check as the web page's "labels exist", in the check's words.
    edited = cli.json("proposals", "edit", run, "--label", "no-such-label", token=rita)
    line = cli.fails(
        "approve", run, "--digest", edited["digest"], token=alex, match="does not exist"
    )
    assert "label no-such-label does not exist in acme/widgets" in line, line
    assert fake_github.writes_received == 0
