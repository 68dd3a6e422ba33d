"""After an action was carried out, `proposals show` and `executions show` say what happened in
words, with the link, as the web pages do (issue 12, items 3 and 11): real processes, real
Postgres, the sandbox forge."""

from __future__ import annotations

import re

from fixtures_cli import Cli, _setup
from resolveflow.sandbox.forge.server import FakeGitHubServer

WHEN = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"


def _approved(cli: Cli, rita: str, alex: str, *what: str) -> tuple[str, str]:
    created = cli.json("proposals", "create", "--repo", "acme/widgets", *what, token=rita)
    approved = cli.json("approve", created["id"], "--digest", created["digest"], token=alex)
    return created["id"], approved["execution_id"]


def test_a_posted_comment_is_shown_with_who_posted_it_when_and_its_link(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    rita, alex = _setup(cli)
    proposal, execution = _approved(
        cli, rita, alex, "--issue", "1", "--comment", "Thanks, looking.", "--label", "bug"
    )
    before = cli.run("proposals", "show", proposal, token=alex).stdout
    assert "outcome" in before and "waiting to be sent" in before, before
    assert cli.json("execute", "--once") == {"processed": 1}
    [comment] = fake_github.comments("acme/widgets", 1)
    url = comment["html_url"]

    for shown in (
        cli.run("proposals", "show", proposal, token=alex).stdout,
        cli.run("executions", "show", execution, token=alex).stdout,
    ):
        line = next(line for line in shown.splitlines() if line.startswith("outcome"))
        assert re.search(rf"posted as @resolveflow-bot at {WHEN}: {re.escape(url)}$", line), line

    data = cli.json("proposals", "show", proposal, token=alex)
    assert data["execution"]["state"] == "sent" and data["digest"]  # existing keys stay
    outcome = data["outcome"]
    assert (outcome["state"], outcome["login"], outcome["url"]) == ("sent", "resolveflow-bot", url)
    assert outcome["text"].startswith("posted as @resolveflow-bot at ")
    from_execution = cli.json("executions", "show", execution, token=alex)
    assert from_execution["comment_url"] == url and from_execution["outcome"]["url"] == url


def test_a_created_issue_is_named_by_its_number_with_its_link(
    cli: Cli, fake_github: FakeGitHubServer, tmp_path: object
) -> None:
    rita, alex = _setup(cli)
    body = cli.env["RESOLVEFLOW_HOME"] + "-body.md"
    with open(body, "w", encoding="utf-8") as handle:
        handle.write("The limits are undocumented.\n")
    proposal, execution = _approved(
        cli, rita, alex, "--new-issue", "--title", "Document the limits", "--body-file", body
    )
    assert cli.json("execute", "--once") == {"processed": 1}
    [made] = [i for i in fake_github.issues("acme/widgets") if i["title"] == "Document the limits"]
    expected = rf"created issue #{made['number']} as @resolveflow-bot at {WHEN}: "
    for shown in (
        cli.run("proposals", "show", proposal, token=alex).stdout,
        cli.run("executions", "show", execution, token=alex).stdout,
    ):
        assert re.search(expected + re.escape(made["html_url"]), shown), shown
    assert cli.json("executions", "show", execution, token=alex)["outcome"]["result_ref"] == str(
        made["number"]
    )


def test_a_failed_action_is_said_in_words_with_the_reason(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    rita, alex = _setup(cli)
    proposal, execution = _approved(cli, rita, alex, "--issue", "1", "--label", "question")
    fake_github.remove_repo_label("acme/widgets", "question")  # gone before it is carried out
    assert cli.run("execute", "--once", ok=False).returncode == 6
    for shown in (
        cli.run("proposals", "show", proposal, token=alex).stdout,
        cli.run("executions", "show", execution, token=alex).stdout,
    ):
        line = next(line for line in shown.splitlines() if line.startswith("outcome"))
        assert "could not be sent: " in line and "question" in line, line
        assert "failed" not in line.split("could not be sent")[0], line
    outcome = cli.json("executions", "show", execution, token=alex)["outcome"]
    assert outcome["state"] == "failed" and outcome["url"] is None
