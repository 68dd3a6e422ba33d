"""The CLI's human output at 80 columns, in plain words (issue 29): every command that prints a
table keeps each column header and each id whole on one line, no machine word of the domain
(``awaiting_approval``, ``run.started``, ``github.issue``, ``is_information_sparse``) reaches a
person, ``--json`` keeps the values, and what is printed after an action was carried out says so.

One world for the module, built through the CLI (``InProcessCli``: the command's ``main`` in this
process, argument parsing to exit code) on a fresh database, the sandbox forge and the sandbox
SMTP server: triage runs (one approved, one waiting), comment and new-issue proposals (posted,
unknown then reconciled, rejected, undecided), a mail reply drafted, approved and sent, and an
indexed docs folder. The one-shot commands (approve, execute, reconcile, mail draft) are read as
they print, at 80 columns, while the world is built.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fixtures_cli import InProcessCli
from resolveflow.sandbox.forge.faults import DropAfterWrite
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.web.words import FACTS, RECONCILE_OUTCOME, TABLES

DATA = Path(__file__).parents[2] / "data"
REPO = "acme/widgets"
MAILBOX = "support@acme.example"
REQUEST = (
    "From: Kim Park <kim@customer.example>\nTo: support@acme.example\n"
    "Subject: My password reset link expired and I cannot sign in to my account any more\n"
    "Message-ID: <req-kim@customer.example>\nDate: Tue, 01 Dec 2026 09:00:00 +0000\n\n"
    "Hi, the reset link expired before I could use it. How do I reset my password?\nKim\n"
)
LONG = "Thanks for the report. Could you share the full log of the crash and the version? " * 3
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A run of hex digits and dashes that starts like an id: printed whole, it is a whole id.
ID_START = re.compile(r"(?<![0-9a-f-])[0-9a-f]{8}-[0-9a-f-]*")
SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
# Free text the gate records is quoted as it is: a failed call's detail names the operation.
QUOTED = {"create_issue"}

# The machine words a person must not read: every value of every enum the pages put in words
# that is not a word itself (snake_case or dotted), the evidence facts, reconcile's outcomes.
MACHINE = sorted(
    {m.value for enum in TABLES for m in enum if "_" in m.value or "." in m.value}
    | set(FACTS)
    | {outcome for outcome in RECONCILE_OUTCOME if "_" in outcome}
)


@dataclass
class World:
    cli: InProcessCli
    rita: str
    alex: str
    ids: dict[str, list[str]]  # kind of id -> every such id the world has
    digests: list[str]
    printed: dict[str, str] = field(default_factory=dict)  # one-shot command -> what it printed
    json: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def world(module_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("narrow")
    github = FakeGitHubServer(default_login="resolveflow-bot")
    github.add_repo(REPO, ["bug", "needs-triage", "question"])
    github.add_issue(REPO, 1, "Widget crashes on start", "It crashes.", user="octocat")
    github.add_issue(REPO, 2, "Colours are off", "Red shows as pink.", user="octocat")
    github.register_token("service-token", "resolveflow-bot")
    with github, FakeSmtpServer() as smtp:
        policy = home / "policy.toml"
        policy.write_text(
            f'[tenants.acme.mailboxes."{MAILBOX}"]\nsmtp_host = "127.0.0.1"\n'
            f'smtp_port = {smtp.port}\nsecurity = "plain"\n'
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVEFLOW_")}
        env.update(
            RESOLVEFLOW_DATABASE_URL=module_database,
            RESOLVEFLOW_GITHUB_API_URL=github.url,
            RESOLVEFLOW_GITHUB_TOKEN="service-token",
            RESOLVEFLOW_GITHUB_TIMEOUT_SECONDS="2",
            RESOLVEFLOW_POLICY_FILE=str(policy),
            RESOLVEFLOW_EMBEDDER="fake",
            RESOLVEFLOW_HOME=str(home / "home"),
            COLUMNS="200",
        )
        yield build_world(InProcessCli(env), github, home)


def _at_80(world: World, name: str, *args: str, token: str | None = None, code: int = 0) -> None:
    """Run a one-shot command at 80 columns and keep what it printed."""
    world.cli.env["COLUMNS"] = "80"
    try:
        done = world.cli.run(*args, token=token, ok=False)
    finally:
        world.cli.env["COLUMNS"] = "200"
    assert done.returncode == code, (args, done.stdout, done.stderr)
    world.printed[name] = done.stdout


def build_world(cli: InProcessCli, github: FakeGitHubServer, home: Path) -> World:
    cli.json("tenants", "add", "acme")
    rita = cli.json("principals", "add", "--subject", "rita", "--role", "requester")["token"]
    alex = cli.json("principals", "add", "--subject", "alex", "--role", "approver")["token"]
    cli.json("repos", "add", REPO)
    world = World(cli, rita, alex, {}, [])
    approved_run = cli.json("triage", f"{REPO}#1", token=rita)
    waiting_run = cli.json("triage", f"{REPO}#2", token=rita)

    def propose(*what: str) -> dict[str, Any]:
        made: dict[str, Any] = cli.json("proposals", "create", "--repo", REPO, *what, token=rita)
        world.digests.append(made["digest"])
        return made

    comment = propose("--issue", "1", "--comment", LONG, "--label", "bug")
    _at_80(world, "approve", "approve", comment["id"], "--digest", comment["digest"], token=alex)
    _at_80(world, "execute", "execute", "--once")
    body = home / "body.md"
    body.write_text("The widget limits are undocumented.\n")
    new_issue = propose("--new-issue", "--title", "Document the limits", "--body-file", str(body))
    cli.json("approve", new_issue["id"], "--digest", new_issue["digest"], token=alex)
    github.inject(DropAfterWrite(), method="POST", path=f"/repos/{REPO}/issues$")
    _at_80(world, "execute unknown", "execute", "--once", code=6)
    _at_80(world, "reconcile", "reconcile")
    rejected = propose("--issue", "2", "--label", "question")
    cli.json("reject", rejected["id"], "--reason", "not a question", token=alex)
    undecided = propose("--issue", "2", "--comment", "Which screen shows it?")
    world.json["undecided"] = undecided
    world.json["comment"] = comment
    digest = approved_run["digest"]
    world.digests += [digest, waiting_run["digest"]]
    _at_80(world, "approve run", "approve", approved_run["run_id"], "--digest", digest, token=alex)
    _at_80(world, "execute nothing", "execute", "--once")
    world.json["execute nothing"] = cli.json("execute", "--once")
    _mail(world, home)
    cli.run("index", "docs", str(DATA / "documents"))

    world.ids = {
        "tenant": [t["id"] for t in cli.json("tenants", "list")],
        "principal": [p["id"] for p in cli.json("principals", "list")],
        "proposal": [p["id"] for p in cli.json("proposals", "list", token=alex)],
        "execution": [e["id"] for e in cli.json("executions", "list", token=alex)],
        "run": [r["run_id"] for r in cli.json("runs", "list", token=alex)],
        "draft": [d["id"] for d in cli.json("mail", "drafts", token=alex)],
    }
    return world


def _mail(world: World, home: Path) -> None:
    cli, rita, alex = world.cli, world.rita, world.alex
    cli.json("mail", "import", "--mailbox", MAILBOX, str(DATA / "mail" / "support-eml"))
    for subject in ("rita", "alex"):
        cli.run("principals", "grant", "--subject", subject, "--mailbox", MAILBOX)
    request = home / "request.eml"
    request.write_text(REQUEST)
    cli.json("mail", "import", "--mailbox", MAILBOX, str(request))  # the request was received
    _at_80(world, "mail draft", "mail", "draft", "--mailbox", MAILBOX, "--reply-to", str(request),
           token=rita)  # fmt: skip
    draft = cli.json("mail", "drafts", token=rita)[0]
    proposal = cli.json("mail", "show", draft["id"], token=rita)["latest"]["proposal"]
    world.digests.append(proposal["digest"])
    cli.json("approve", proposal["id"], "--digest", proposal["digest"], token=alex)
    assert cli.json("execute", "--once") == {"processed": 1}
    world.json["draft"] = draft


# Every command that prints a table, the tables' headers, and the ids it prints whole.
TABLES_PRINTED: list[tuple[tuple[str, ...], list[str], list[str]]] = [
    (("tenants", "list"), ["name", "id"], ["tenant"]),
    (("principals", "list"), ["subject", "roles", "own token", "API token", "id"], ["principal"]),
    (("repos", "list"), ["repository"], []),
    (("db", "status"), ["version", "name", "applied at", "note"], []),
    (("proposals", "list"), ["id", "version", "kind", "target", "decision", "execution"],
     ["proposal"]),
    (("executions", "list"), ["id", "state", "kind", "target", "detail"], ["execution"]),
    (("executions", "show", "{execution}"),
     ["step", "credential", "started", "outcome", "HTTP status", "at", "actor", "event"], []),
    (("runs", "list"), ["run", "status", "target", "classification", "rule"], ["run"]),
    (("runs", "show", "{run}"), ["fact", "value", "how it was found", "at", "actor", "event"],
     []),
    (("mail", "drafts"), ["id", "mailbox", "requester", "subject", "versions", "created"],
     ["draft"]),
    (("search", "disk pressure on the build agents"),
     ["#", "relevance", "kind", "id", "title", "snippet"], []),
]  # fmt: skip
# The one-shot commands read while the world was built, with their tables' headers.
ONE_SHOT: dict[str, list[str]] = {
    "execute": ["execution", "state", "detail"],
    "execute unknown": ["execution", "state", "detail"],
    "reconcile": ["execution", "state", "outcome", "detail"],
    "approve": [],
    "approve run": [],
    "execute nothing": [],
    "mail draft": [],
}


def _cells(line: str) -> str:
    """A line with the box drawing replaced by column separators."""
    return re.sub(r"[\u2500-\u257f]", "|", line)


def _readable(out: str, headers: list[str], ids: list[str], snake: bool = True) -> list[str]:
    """What is wrong with ``out``: a header or an id not whole on one line, a machine word."""
    wrong = []
    lines = [_cells(line) for line in out.splitlines()]
    for header in headers:
        whole = re.compile(rf"(^|[\s|]){re.escape(header)}($|[\s|])")
        if not any(whole.search(line) for line in lines):
            wrong.append(f"the header {header!r} is not whole on one line")
    wrong += [f"the id {i} is not whole on one line" for i in ids if i not in out]
    for line in lines:
        wrong += [
            f"a cut id {part!r}" for part in ID_START.findall(line) if not UUID.fullmatch(part)
        ]
    for word in MACHINE:
        if re.search(rf"(?<![\w.]){re.escape(word)}(?![\w.])", out):
            wrong.append(f"the machine word {word!r}")
    if snake:
        wrong += [f"the snake_case word {w!r}" for w in SNAKE.findall(out) if w not in QUOTED]
    return wrong


def test_every_table_keeps_its_headers_and_ids_whole_at_80_columns(world: World) -> None:
    someone = {
        "execution": world.ids["execution"][0],
        "run": world.ids["run"][-1],  # the first run: approved and carried out
    }
    wrong: list[str] = []
    world.cli.env["COLUMNS"] = "80"
    try:
        for command, headers, kinds in TABLES_PRINTED:
            args = [part.format(**someone) for part in command]
            done = world.cli.run(*args, token=world.alex, ok=False)
            ids = [i for kind in kinds for i in world.ids[kind]]
            said = _readable(done.stdout, headers, ids, snake=command != ("db", "status"))
            if done.returncode != 0 or done.stderr:
                said.append(f"exit {done.returncode}: {done.stderr}")
            wrong += [f"{' '.join(command)}: {problem}" for problem in said]
    finally:
        world.cli.env["COLUMNS"] = "200"
    for name, headers in ONE_SHOT.items():
        said = _readable(world.printed[name], headers, [])
        wrong += [f"{name}: {problem}" for problem in said]
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("kind", ["proposal", "execution", "run", "draft"])
def test_every_show_command_prints_plain_words_and_whole_ids(world: World, kind: str) -> None:
    command = {"proposal": "proposals", "execution": "executions", "run": "runs", "draft": "mail"}
    wrong: list[str] = []
    world.cli.env["COLUMNS"] = "80"
    try:
        for shown in world.ids[kind]:
            done = world.cli.run(command[kind], "show", shown, token=world.alex)
            problems = _readable(done.stdout, [], [shown])
            digests = [d for d in world.digests if d[:16] in done.stdout]
            problems += [f"the digest {d} is cut" for d in digests if d not in done.stdout]
            wrong += [f"{kind} {shown}: {problem}" for problem in problems]
    finally:
        world.cli.env["COLUMNS"] = "200"
    assert wrong == [], "\n".join(wrong)


def test_the_check_finds_what_it_looks_for() -> None:
    """The check above, on output the CLI printed before issue 29: it fails."""
    before = (
        "┃ run                                  ┃ status  ┃ classi… ┃\n"
        "│ 83b2318a-693c-40f5-8192-a2f70c5589b4 │ awaiting_approval │ run.started │\n"
        "│ 1f907095-e30e-4ff7-86 │ github.issue │ is_information_sparse │\n"
    )
    wrong = _readable(before, ["run", "status", "classification"], [])
    assert "the header 'classification' is not whole on one line" in wrong
    assert "a cut id '1f907095-e30e-4ff7-86'" in wrong
    for word in ("awaiting_approval", "run.started", "github.issue", "is_information_sparse"):
        assert f"the machine word {word!r}" in wrong


def test_json_keeps_the_values_of_the_enums(world: World) -> None:
    cli, alex = world.cli, world.alex
    runs = {r["status"] for r in cli.json("runs", "list", token=alex)}
    assert runs == {"completed", "awaiting_approval"}
    listed = cli.json("proposals", "list", token=alex)
    assert {p["kind"] for p in listed} == {"github.issue", "github.issue_create", "email.send"}
    assert {p["execution_state"] for p in listed} == {None, "sent"}
    execution = cli.json("executions", "show", world.ids["execution"][-1], token=alex)
    assert [e["event"] for e in execution["timeline"]][:2] == [
        "proposal.created",
        "proposal.approved",
    ]
    assert world.json["execute nothing"] == {"processed": 0}


def test_execute_with_nothing_due_says_what_happened(world: World) -> None:
    approved = world.printed["approve run"]
    assert "(posted)" in approved and "carried out as it was approved" in approved, approved
    said = world.printed["execute nothing"]
    assert "processed 0" not in said
    assert said.startswith("nothing waiting to be carried out: 3 already done."), said
    assert "An approved run's action is carried out as it is approved" in said
    # A proposal's approval says what carries it out; the execution then says what it did.
    assert "resolveflow execute --once carries it out" in world.printed["approve"]
    assert "processed 1 execution: 1 posted" in world.printed["execute"]


def test_a_text_is_titled_by_what_became_of_it(world: World) -> None:
    cli, alex = world.cli, world.alex
    posted = cli.run("proposals", "show", world.json["comment"]["id"], token=alex).stdout
    assert "comment, as it was posted" in posted and "will be posted" not in posted, posted
    assert "approve with" not in posted
    waiting = cli.run("proposals", "show", world.json["undecided"]["id"], token=alex).stdout
    assert "comment, exactly as it will be posted" in waiting and "approve with" in waiting
    run = cli.run("runs", "show", world.ids["run"][-1], token=alex).stdout  # labels, posted
    assert "approve with" not in run and "will be posted" not in run, run


def test_a_sent_reply_no_longer_asks_to_be_approved(world: World) -> None:
    drafted = world.printed["mail draft"]
    assert "approve with  resolveflow approve" in drafted
    assert "body, as the recipient will see it" in drafted
    sent = world.cli.run("mail", "show", world.json["draft"]["id"], token=world.alex).stdout
    assert re.search(r"^state +approved and sent$", sent, re.MULTILINE), sent
    assert "approve with" not in sent and "body, as it was sent" in sent


@pytest.mark.parametrize(
    "question",
    ["How do I clear disk pressure on the build agents?", "What is the best sourdough starter?"],
)
def test_ask_prints_its_outcome_whole_at_80_columns(world: World, question: str) -> None:
    """An answer, a "may help" list or the abstention: no table line wider than the terminal
    (prose is printed as one line for the terminal to wrap, so a copied quote has no breaks),
    no machine word (the quoted pages may hold snake_case names of their own: not checked)."""
    world.cli.env["COLUMNS"] = "80"
    try:
        done = world.cli.run("ask", question, token=world.alex, ok=False)
    finally:
        world.cli.env["COLUMNS"] = "200"
    assert done.returncode == 0 and done.stderr == "", (done.stdout, done.stderr)
    drawn = [line for line in done.stdout.splitlines() if re.search(r"[\u2500-\u257f]", line)]
    wide = [line for line in drawn if len(line) > 80]
    assert wide == [] and _readable(done.stdout, [], [], snake=False) == [], done.stdout
