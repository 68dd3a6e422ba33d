"""Both action kinds through the CLI in real processes, against the sandbox forge with faults."""

from __future__ import annotations

from pathlib import Path

from fixtures_cli import Cli, _setup
from resolveflow.gate.domain.actions import execution_marker
from resolveflow.sandbox.forge.server import DropAfterWrite, FakeGitHubServer, Status

REPO = "acme/widgets"
BODY = "The widget crashes on start.\n\nSteps: run `widget --start`.\n"


def _new_issue(cli: Cli, token: str, body_file: Path, *extra: str) -> dict:
    return cli.json(
        "proposals", "create", "--repo", REPO, "--new-issue", "--title", "Widget crashes",
        "--body-file", str(body_file), *extra, token=token,
    )  # fmt: skip


def _last_error(cli: Cli, *args: str) -> tuple[int, str]:
    """The exit code and the error line (the client's warnings about the fault come before it)."""
    result = cli.run(*args, ok=False)
    assert "Traceback" not in result.stderr
    return result.returncode, result.stderr.strip().splitlines()[-1]


def _opened(fake: FakeGitHubServer) -> list[dict]:
    return [issue for issue in fake.issues(REPO) if issue["number"] != 1]


def test_a_new_issue_is_proposed_shown_approved_and_created_once(
    cli: Cli, fake_github: FakeGitHubServer, tmp_path: Path
) -> None:
    rita, alex = _setup(cli)
    fake_github.add_repo(REPO, pushers=["alice"])
    body = tmp_path / "issue.md"
    body.write_text(BODY, encoding="utf-8")
    created = _new_issue(cli, rita, body, "--label", "bug", "--assignee", "alice")
    assert created["kind"] == "github.issue_create"
    assert created["summary"] == "acme/widgets (new issue)"

    shown = cli.run("proposals", "show", created["id"], token=alex).stdout
    assert "Widget crashes" in shown and "widget --start" in shown and created["digest"] in shown
    [listed] = cli.json("proposals", "list", token=alex)
    assert (listed["kind"], listed["target"]) == ("github.issue_create", "acme/widgets (new issue)")

    approved = cli.json("approve", created["id"], "--digest", created["digest"], token=alex)
    assert cli.json("execute", "--once") == {"processed": 1}
    execution = cli.json("executions", "show", approved["execution_id"], token=alex)
    [issue] = _opened(fake_github)
    assert execution["state"] == "sent"
    assert execution["result_url"] == issue["html_url"]
    assert issue["body"] == BODY + "\n\n" + execution_marker(execution["id"])
    assert [label["name"] for label in issue["labels"]] == ["bug"]
    assert [person["login"] for person in issue["assignees"]] == ["alice"]
    assert [step["step"] for step in execution["attempts"]] == ["create"]


def test_a_dropped_response_is_unknown_until_reconciliation_finds_the_one_issue(
    cli: Cli, fake_github: FakeGitHubServer, tmp_path: Path
) -> None:
    rita, alex = _setup(cli)
    body = tmp_path / "issue.md"
    body.write_text(BODY, encoding="utf-8")
    created = _new_issue(cli, rita, body)
    approved = cli.json("approve", created["id"], "--digest", created["digest"], token=alex)
    fake_github.inject(DropAfterWrite(), method="POST", path=f"/repos/{REPO}/issues")
    # An outcome that is not known is work not done: named on stderr, exit 6 (docs/cli.md).
    code, line = _last_error(cli, "execute", "--once")
    assert code == 6 and "1 of 1 executed execution did not complete" in line, line
    assert f"{approved['execution_id']} unknown" in line
    unknown = cli.json("executions", "show", approved["execution_id"], token=alex)
    assert unknown["state"] == "unknown"

    [settled] = cli.json("reconcile")
    assert settled["state"] == "sent"
    assert cli.json("execute", "--once") == {"processed": 0}
    [issue] = _opened(fake_github)
    sent = cli.json("executions", "show", approved["execution_id"], token=alex)
    assert (sent["state"], sent["result_url"]) == ("sent", issue["html_url"])
    assert fake_github.writes_received == 1


def test_edit_reject_and_a_person_resolving_work_for_new_issues(
    cli: Cli, fake_github: FakeGitHubServer, tmp_path: Path
) -> None:
    rita, alex = _setup(cli)
    body = tmp_path / "issue.md"
    body.write_text(BODY, encoding="utf-8")
    first = _new_issue(cli, rita, body)
    second = cli.json(
        "proposals", "edit", first["id"], "--title", "Widget crashes at start", token=rita
    )
    assert (second["version"], second["action"]["title"]) == (2, "Widget crashes at start")
    cli.fails("approve", first["id"], "--digest", first["digest"], token=alex, match="superseded")
    rejected = cli.json("reject", second["id"], "--reason", "duplicate", token=alex)
    assert rejected["decision"] == "rejected"

    third = _new_issue(cli, rita, body, "--label", "question")
    approved = cli.json("approve", third["id"], "--digest", third["digest"], token=alex)
    fake_github.inject(Status(502), method="POST", path=f"/repos/{REPO}/issues")
    assert cli.run("execute", "--once", ok=False).returncode == 6
    code, still = _last_error(cli, "reconcile")
    assert code == 6 and "1 of 1 reconciled execution did not complete" in still, still
    assert f"{approved['execution_id']} unknown" in still
    resolved = cli.json("executions", "resolve", approved["execution_id"], "--not-sent", token=alex)
    assert resolved["state"] == "not_sent"
    assert _opened(fake_github) == []


def test_bad_combinations_get_one_line(cli: Cli, tmp_path: Path) -> None:
    rita, _ = _setup(cli)
    body = tmp_path / "issue.md"
    body.write_text(BODY, encoding="utf-8")
    cli.fails("proposals", "create", "--repo", REPO, "--new-issue", "--body-file", str(body),
              token=rita, match="--new-issue needs --title and --body-file")  # fmt: skip
    cli.fails("proposals", "create", "--repo", REPO, "--issue", "1", "--title", "t",
              token=rita, match="go with --new-issue")  # fmt: skip
    cli.fails("proposals", "create", "--repo", REPO, token=rita, match="give --issue N")
    cli.fails("proposals", "create", "--repo", REPO, "--new-issue", "--title", "a" * 300,
              "--body-file", str(body), token=rita, match="title")  # fmt: skip
