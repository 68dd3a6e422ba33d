"""Every CLI command that shows or lists proposals and executions, over every action kind, with and
without ``--json`` (issue 26, finding 8: ``proposals show`` crashed on an
email proposal with ``KeyError: 'labels'``). Each kind's own fields are printed: a comment and its
labels, a new issue's title, body, labels and assignees, a GitLab issue's project, title,
description, labels and assignees, an email's From, To, Cc, Bcc, subject and text.

One world for the whole module (a proposal of each kind, approved and sent on the sandboxes). The
world is built by real processes; the cases run the CLI's ``main`` in this process
(``InProcessCli``): the same code from argument parsing to the printed line and the exit code,
without an interpreter start per case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from fixtures_cli import Cli, InProcessCli
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.sandbox.gitlab.server import FakeGitLabServer
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.web.words import words

MAIL = Path(__file__).parents[2] / "data" / "mail"
REPO = "acme/widgets"
MAILBOX = "support@acme.example"
GITLAB_TOKEN = "glpat-acme-bot"
REQUEST = (
    "From: Kim Park <kim@customer.example>\nTo: support@acme.example\n"
    "Subject: My password reset link expired\nMessage-ID: <req-kim@customer.example>\n"
    "Date: Tue, 01 Dec 2026 09:00:00 +0000\n\n"
    "Hi, the reset link expired before I could use it. How do I reset my password?\nKim\n"
)
# What the reply says, apart from the example it reused (an edit by a person).
REPLY = "Hello Kim,\n\nReset links are valid for one hour: ask for a new one.\n\nAcme Support\n"


def policy_text(smtp_port: int) -> str:
    return (
        f'[tenants.acme.mailboxes."{MAILBOX}"]\nsmtp_host = "127.0.0.1"\n'
        f'smtp_port = {smtp_port}\nsecurity = "plain"\n'
        'signature = "Best regards,\\nAcme Support"\n\n'
        '[tenants.acme.projects.ops]\nforge = "gitlab"\nproject = "group/ops"\n'
        'labels = ["ops"]\nassignees = { alice = 12 }\n'
    )


@dataclass
class KindsWorld:
    cli: Cli
    tokens: dict[str, str]  # subject -> API token
    proposals: dict[str, dict[str, Any]]  # kind -> the proposal as `proposals show --json` has it
    executions: dict[str, str]  # kind -> execution id
    draft_id: str
    rejected_id: str  # an email proposal rejected with a reason naming the customer
    pending_id: str  # an email proposal nobody decided yet


@pytest.fixture(scope="module")
def kinds_world(
    module_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KindsWorld]:
    home = tmp_path_factory.mktemp("kinds")
    github = FakeGitHubServer(default_login="resolveflow-bot")
    github.add_repo(REPO, ["bug", "question"], pushers=["alice"])
    github.add_issue(REPO, 1, "Widget crashes on start", "It crashes.", user="octocat")
    github.add_issue(REPO, 2, "Widget crashes at start", "Same crash.", user="octocat")
    github.register_token("service-token", "resolveflow-bot")
    with github, FakeGitLabServer() as gitlab, FakeSmtpServer() as smtp:
        gitlab.state.add_user(7, "acme-bot", GITLAB_TOKEN)
        gitlab.state.add_user(12, "alice")
        gitlab.state.add_project(42, "group/ops", ["ops"], members=[7])
        policy = home / "policy.toml"
        policy.write_text(policy_text(smtp.port))
        env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
        env.update(
            RESOLVEFLOW_DATABASE_URL=module_database,
            RESOLVEFLOW_GITHUB_API_URL=github.url,
            RESOLVEFLOW_GITHUB_TOKEN="service-token",
            RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS="2",
            RESOLVEFLOW_GITLAB_URL=gitlab.url,
            RESOLVEFLOW_GITLAB_TIMEOUT_SECONDS="2",
            RESOLVEFLOW_POLICY_FILE=str(policy),
            RESOLVEFLOW_TOKEN_ENCRYPTION_KEY=Fernet.generate_key().decode(),
            RESOLVEFLOW_EMBEDDER="fake",
            RESOLVEFLOW_HOME=str(home / "home"),
            COLUMNS="200",
        )
        world = build_world(Cli(env), home)
        world.cli = InProcessCli(env)
        yield world


def build_world(cli: Cli, home: Path) -> KindsWorld:
    cli.json("tenants", "add", "acme")
    tokens = {
        subject: cli.json("principals", "add", "--subject", subject, "--role", role)["token"]
        for subject, role in (
            ("rita", "requester"),
            ("alex", "approver"),
            ("bea", "approver"),  # holds no mailbox grant
            ("adam", "admin"),  # holds no mailbox grant
            ("rick", "requester"),  # holds no mailbox grant
        )
    }
    rita, alex = tokens["rita"], tokens["alex"]
    cli.json("repos", "add", REPO)
    stored = subprocess.run(
        [sys.executable, "-m", "resolveflow", "gitlab", "token", "set", "--tenant", "acme",
         "--stdin"],
        env=cli.env, input=GITLAB_TOKEN + "\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    comment, body = home / "comment.md", home / "body.md"
    comment.write_text("Could you share the crash log?\n")
    body.write_text("The widget limits are undocumented.\n")
    made = {
        "github.issue": cli.json(
            "proposals", "create", "--repo", REPO, "--issue", "1", "--comment-file", str(comment),
            "--label", "question", token=rita,
        ),
        "github.issue_create": cli.json(
            "proposals", "create", "--repo", REPO, "--new-issue", "--title", "Document limits",
            "--body-file", str(body), "--label", "bug", "--assignee", "alice", token=rita,
        ),
        "gitlab.issue_create": cli.json(
            "issues", "prepare", "--project", "ops", "--title", "Disk full on ops-3",
            "--body-file", str(body), "--label", "ops", "--assignee", "alice", token=rita,
        ),
        "github.issue_close_duplicate": cli.json(
            "proposals", "close-duplicate", f"{REPO}#2", "--of", "1", "--grace-days", "2",
            token=rita,
        ),
    }  # fmt: skip
    cli.json("mail", "import", "--mailbox", MAILBOX, str(MAIL / "support-eml"))
    for subject in ("rita", "alex"):
        cli.run("principals", "grant", "--subject", subject, "--mailbox", MAILBOX)
    request = home / "request.eml"
    request.write_text(REQUEST)
    cli.json("mail", "import", "--mailbox", MAILBOX, str(request))  # the request was received
    reply = home / "reply.txt"
    reply.write_text(REPLY)

    def email_proposal() -> tuple[str, dict[str, Any]]:
        draft = cli.json("mail", "draft", "--mailbox", MAILBOX, "--reply-to", str(request),
                         token=rita)  # fmt: skip
        edited = cli.json("mail", "edit", draft["id"], "--version", "1", "--body-file",
                          str(reply), token=rita)["latest"]  # fmt: skip
        assert edited["findings"] == [], edited["findings"]
        return draft["id"], edited["proposal"]

    draft_id, made["email.send"] = email_proposal()
    _, rejected = email_proposal()
    cli.json("reject", rejected["id"], "--reason", "Kim (kim@customer.example) asked for a call",
             token=alex)  # fmt: skip
    _, pending = email_proposal()
    executions = {
        kind: cli.json("approve", view["id"], "--digest", view["digest"], token=alex)[
            "execution_id"
        ]
        for kind, view in made.items()
    }
    assert cli.json("execute", "--once") == {"processed": 5}
    shown = {kind: cli.json("proposals", "show", made[kind]["id"], token=alex) for kind in made}
    return KindsWorld(cli, tokens, shown, executions, draft_id, rejected["id"], pending["id"])


KINDS = [
    "github.issue",
    "github.issue_create",
    "gitlab.issue_create",
    "email.send",
    "github.issue_close_duplicate",
]
# Carried out once: sent, but a close as a duplicate then waits out its grace period queued.
STATE = {"github.issue_close_duplicate": "pending"}

# What `proposals show` prints for each kind, besides the id, the digest and the state.
SHOWN = {
    "github.issue": ["acme/widgets#1", "question", "Could you share the crash log?"],
    "github.issue_create": ["Document limits", "bug", "alice", "limits are undocumented"],
    "gitlab.issue_create": ["group/ops", "Disk full on ops-3", "ops", "alice", "undocumented"],
    "email.send": [MAILBOX, "kim@customer.example", "Re: My password reset link expired",
                   "ask for a new one"],
    "github.issue_close_duplicate": ["acme/widgets#2", "duplicate of #1", "2 days",
                                     "unless someone objects"],
}  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_proposals_show_prints_each_kinds_fields(kinds_world: KindsWorld, kind: str) -> None:
    view = kinds_world.proposals[kind]
    printed = kinds_world.cli.run("proposals", "show", view["id"], token=kinds_world.tokens["alex"])
    assert "Traceback" not in printed.stderr and printed.stderr == ""
    text = printed.stdout
    # A person reads the kind in words (issue 29); --json keeps its value (below).
    assert kind not in text
    for expected in [view["id"], view["digest"], words(kind, "ActionKind"), *SHOWN[kind]]:
        assert expected in text, (expected, text)
    assert "outcome" in text


@pytest.mark.parametrize("kind", KINDS)
def test_proposals_show_json_has_the_exact_action(kinds_world: KindsWorld, kind: str) -> None:
    view = kinds_world.proposals[kind]
    assert view["kind"] == kind and view["action"]["kind"] == kind
    state = STATE.get(kind, "sent")
    assert view["decision"] == "approved" and view["outcome"]["state"] == state
    dumped = json.dumps(view)
    for expected in SHOWN[kind]:
        assert expected in dumped, expected


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("kind", KINDS)
def test_executions_show_names_the_kind_target_and_outcome(
    kinds_world: KindsWorld, kind: str, as_json: bool
) -> None:
    execution_id = kinds_world.executions[kind]
    args = ("executions", "show", execution_id, *(("--json",) if as_json else ()))
    printed = kinds_world.cli.run(*args, token=kinds_world.tokens["alex"])
    assert printed.stderr == ""
    summary = kinds_world.proposals[kind]["summary"]
    if as_json:
        view = json.loads(printed.stdout)
        state = STATE.get(kind, "sent")
        assert (view["kind"], view["target"], view["state"]) == (kind, summary, state)
        assert view["result_url"] or view["comment_url"]
    else:
        said = (words(kind, "ActionKind"), words(STATE.get(kind, "sent"), "ExecutionState"))
        for expected in (execution_id, *said, summary, "outcome"):
            assert expected in printed.stdout, (expected, printed.stdout)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("command", ["proposals", "executions"])
def test_the_lists_show_every_kind(kinds_world: KindsWorld, command: str, as_json: bool) -> None:
    args = (command, "list", *(("--json",) if as_json else ()))
    printed = kinds_world.cli.run(*args, token=kinds_world.tokens["alex"])
    assert printed.stderr == ""
    for kind in KINDS:
        wanted = kinds_world.proposals[kind]["id"] if command == "proposals" else None
        wanted = wanted or kinds_world.executions[kind]
        if as_json:
            [row] = [r for r in json.loads(printed.stdout) if r["id"] == wanted]
            assert (row["kind"], row["target"]) == (kind, kinds_world.proposals[kind]["summary"])
        else:
            assert wanted in printed.stdout and words(kind, "ActionKind") in printed.stdout


# --- the mailbox grant on every command that reads mail (issue 26, finding 5) -----------------

SECRETS = {
    "customer's text": "expired before I could use it",
    "reply text": "ask for a new one",
    "example text": "Forgot password",
    "recipient": "kim@customer.example",
    "subject": "password reset link expired",
}
# command (with {ids}) -> (the exit code without the grant, the id the answer still names,
#                          what of the mail the grant holder sees)
COMMANDS: dict[tuple[str, ...], tuple[int, str | None, tuple[str, ...]]] = {
    ("proposals", "show", "{sent}"): (4, None, ("recipient", "subject", "reply text")),
    ("proposals", "show", "{sent}", "--json"): (4, None, ("recipient", "subject", "reply text")),
    ("proposals", "list"): (0, "{sent}", ()),
    ("proposals", "list", "--json"): (0, "{sent}", ()),
    ("executions", "show", "{execution}"): (4, None, ()),
    ("executions", "show", "{execution}", "--json"): (4, None, ()),
    ("executions", "list"): (0, "{execution}", ()),
    ("executions", "list", "--json"): (0, "{execution}", ()),
    ("mail", "show", "{draft}"): (4, None, ("recipient", "reply text")),
    ("mail", "show", "{draft}", "--json"): (4, None, tuple(SECRETS)),
    ("mail", "drafts"): (0, None, ("subject",)),
    ("mail", "drafts", "--json"): (0, None, ("subject",)),
}


def _ids(world: KindsWorld) -> dict[str, str]:
    return {
        "sent": world.proposals["email.send"]["id"],
        "execution": world.executions["email.send"],
        "draft": world.draft_id,
        "pending": world.pending_id,
    }


@pytest.mark.parametrize("reader", ["bea", "adam", "rick"])
def test_a_command_shows_no_mail_without_the_grant(kinds_world: KindsWorld, reader: str) -> None:
    """An approver, an admin and a requester without the grant. The approver runs every row;
    the others (the same service calls) the --json rows, to keep the module's processes few."""
    ids, wrong = _ids(kinds_world), []
    rows = {c: row for c, row in COMMANDS.items() if reader == "bea" or "--json" in c}
    for command, (code, names, _) in rows.items():
        args = [part.format(**ids) for part in command]
        done = kinds_world.cli.run(*args, token=kinds_world.tokens[reader], ok=False)
        said = done.stdout + done.stderr
        if done.returncode != code:
            wrong.append(f"{' '.join(command)}: exit {done.returncode}, not {code}: {said}")
        if code and "no grant for the mailbox support@acme.example" not in done.stderr:
            wrong.append(f"{' '.join(command)}: says {done.stderr!r}")
        if names is not None and names.format(**ids) not in done.stdout:
            wrong.append(f"{' '.join(command)}: the row {names} is missing")
        wrong += [
            f"{' '.join(command)}: shows the {what}" for what, s in SECRETS.items() if s in said
        ]
    # An edit reads the mail it changes: refused too, and no version is written.
    edit = ("proposals", "edit", ids["pending"], "--subject", "Re: call me")
    done = kinds_world.cli.run(*edit, token=kinds_world.tokens[reader], ok=False)
    if done.returncode != 4 or "Traceback" in done.stderr:
        wrong.append(f"proposals edit: exit {done.returncode}: {done.stderr}")
    assert wrong == [], "\n".join(wrong)


def test_the_grant_holder_reads_the_mail_from_every_command(kinds_world: KindsWorld) -> None:
    ids, wrong = _ids(kinds_world), []
    for command, (_, names, shown) in COMMANDS.items():
        args = [part.format(**ids) for part in command]
        done = kinds_world.cli.run(*args, token=kinds_world.tokens["alex"], ok=False)
        if done.returncode != 0:
            wrong.append(f"{' '.join(command)}: exit {done.returncode}: {done.stderr}")
        if names is not None and names.format(**ids) not in done.stdout:
            wrong.append(f"{' '.join(command)}: the row {names} is missing")
        wrong += [
            f"{' '.join(command)}: no {what}" for what in shown if SECRETS[what] not in done.stdout
        ]
    assert wrong == [], "\n".join(wrong)
