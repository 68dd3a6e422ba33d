"""Every field an action took from the tenant's policy, re-checked at execution against the
policy in force (issue 26, finding 7): the policy changes between the approval and the write,
and the execution is refused with the reason in its outcome and its audit event, and nothing
reaches the fake forge, the fake GitLab or the SMTP server. One test per kind and field.

A GitHub issue's labels and assignees are not taken from the policy file (any label of an
allowlisted repository, any login): their re-checks are the repository on the allowlist and the
labels existing, which are tested here too."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from conftest import World, execution_state, make_executor
from fixtures_github import SERVICE_TOKEN
from fixtures_mail import FAST, MAILBOX, mailbox_toml, received, set_grant
from resolveflow.accounts import admin
from resolveflow.adapters.embedder.hashing import HashingEmbedder
from resolveflow.adapters.github.client import GitHubKitClient
from resolveflow.ask.issues_prepare import IssueTargets, prepare_issue
from resolveflow.bootstrap import kinds as gate_kinds
from resolveflow.bootstrap.gitlab import TenantGitLab
from resolveflow.bootstrap.mail import TenantMail
from resolveflow.config import GitLabSettings, Settings
from resolveflow.domain.records import ExecutionState
from resolveflow.errors import PolicyViolation
from resolveflow.gate import approvals, proposals
from resolveflow.gate.executor import Executor
from resolveflow.gate.lease import GateSettings
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.mail.drafts import Edit, MailDrafts
from resolveflow.mail.loader import parse_message
from resolveflow.mail.search import MailSearcher
from resolveflow.policy_file import PolicyFile, parse_policy
from resolveflow.sandbox.forge.server import FakeGitHubServer
from resolveflow.sandbox.gitlab.server import FakeGitLabServer
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.store import audit, gitlab_tokens
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import TokenCipher


class Policy:
    """The policy file as the running process reads it: swapped between proposal and write."""

    def __init__(self, text: str) -> None:
        self.file = parse_policy(text)

    def __call__(self) -> PolicyFile:
        return self.file

    def change(self, text: str) -> None:
        self.file = parse_policy(text)


def refused(db: Database, world: World, execution_id: Any, reason: str) -> None:
    """Refused before sending: the outcome and the audit event both name ``reason``."""
    after = execution_state(db, world, execution_id)
    assert after.state is ExecutionState.FAILED, after.detail
    assert after.detail is not None and after.detail.startswith("refused before sending")
    assert reason in after.detail, after.detail
    with db.tenant(world.tenant.id) as conn:
        events = audit.events_for(conn, world.tenant.id, [str(execution_id)])
    messages = [e.details.get("message", "") for e in events if e.event == "execution.refused"]
    assert len(messages) == 1 and reason in messages[0], events


# --- gitlab.issue_create: project, labels, assignees -------------------------------------------

GITLAB_TOKEN = "glpat-acme-bot"
ALIAS = """
[tenants.acme.projects.ops]
forge = "gitlab"
project = "group/ops"
labels = [{labels}]
assignees = {{ {assignees} }}
"""


def alias(labels: str = '"bug", "ops"', assignees: str = 'alice = 12, bob = "bob"') -> str:
    return ALIAS.format(labels=labels, assignees=assignees)


@dataclass
class GitLabWorld:
    policy: Policy
    access: TenantGitLab
    fake: FakeGitLabServer

    def executor(self, db: Database) -> Executor:
        return Executor(db, None, GateSettings(lease_seconds=30.0), gitlab=self.access)  # type: ignore[arg-type]


@pytest.fixture
def gitlab(db: Database, world: World) -> Iterator[GitLabWorld]:
    with FakeGitLabServer() as fake:
        fake.state.add_user(7, "acme-bot", GITLAB_TOKEN)
        fake.state.add_user(12, "alice")
        fake.state.add_user(13, "bob")
        fake.state.add_user(14, "carol")
        fake.state.add_project(42, "group/ops", ["bug", "ops"], members=[7])
        cipher = TokenCipher(TokenCipher.generate_key())
        with db.tenant(world.tenant.id) as conn:
            gitlab_tokens.save_gitlab_token(conn, cipher, world.tenant.id, "acme", GITLAB_TOKEN)
        policy = Policy(alias())
        settings = Settings(gitlab=GitLabSettings(url=fake.url, timeout_seconds=2.0))
        access = TenantGitLab(db, settings, policy, cipher)
        yield GitLabWorld(policy, access, fake)
        access.close()


def approved_gitlab_issue(db: Database, world: World, gitlab: GitLabWorld) -> Any:
    """Prepared with ``--label bug --assignee alice --assignee bob``, then approved."""
    targets = IssueTargets(policy=gitlab.policy, gitlab=gitlab.access)
    view = prepare_issue(
        db,
        world.requester(db),
        targets,
        alias="ops",
        title="Disk full on ops-3",
        body="The disk is full.",
        labels=["bug"],
        assignees=["alice", "bob"],
    )
    return approvals.approve(db, world.approver(db), view["id"], view["digest"], 3600)


@pytest.mark.parametrize(
    ("changed", "reason"),
    [
        pytest.param(alias(labels='"ops"'), "label bug (allowed now: ops)", id="label"),
        pytest.param(
            alias(assignees='bob = "bob"'),
            "assignee alice (not in the project's assignee map)",
            id="assignee-removed",
        ),
        pytest.param(
            alias(assignees='alice = 14, bob = "bob"'),
            "assignee alice (now maps to another GitLab user)",
            id="assignee-remapped-id",
        ),
        pytest.param(
            alias(assignees='alice = 12, bob = "carol"'),
            "assignee bob (now maps to another GitLab user)",
            id="assignee-remapped-username",
        ),
        pytest.param(
            alias(labels='"ops"', assignees=""),
            "label bug (allowed now: ops)",
            id="the-issue-26-reproduction",
        ),
        pytest.param(
            alias().replace("group/ops", "group/other"),
            "GitLab project group/ops is not one of the tenant's project aliases",
            id="project",
        ),
    ],
)
def test_gitlab_fields_no_longer_allowed_are_refused_and_nothing_is_created(
    db: Database, world: World, gitlab: GitLabWorld, changed: str, reason: str
) -> None:
    approved = approved_gitlab_issue(db, world, gitlab)
    gitlab.policy.change(changed)
    gitlab.executor(db).run_due()
    refused(db, world, approved.execution.id, reason)
    assert gitlab.fake.writes_received == 0 and gitlab.fake.issues(42) == []


def test_approving_refuses_gitlab_fields_the_alias_no_longer_allows(
    db: Database, world: World, gitlab: GitLabWorld
) -> None:
    """The approval checks read the aliases in force too, and the page shows the same check."""
    targets = IssueTargets(policy=gitlab.policy, gitlab=gitlab.access)
    view = prepare_issue(
        db,
        world.requester(db),
        targets,
        alias="ops",
        title="Disk full on ops-3",
        body="The disk is full.",
        labels=["bug"],
        assignees=["alice"],
    )
    gitlab.policy.change(alias(labels='"ops"', assignees=""))
    aliases = gitlab.access.project_aliases
    [gate] = [
        c
        for c in approvals.checks_for(db, world.approver(db), view["id"], 3600, aliases=aliases)
        if c.name == "allowed by the project alias"
    ]
    assert not gate.ok and "label bug (allowed now: ops)" in gate.reason
    with pytest.raises(PolicyViolation, match=r"label bug \(allowed now: ops\)"):
        approvals.approve(db, world.approver(db), view["id"], view["digest"], 3600, aliases=aliases)
    gitlab.policy.change(alias())
    approved = approvals.approve(
        db, world.approver(db), view["id"], view["digest"], 3600, aliases=aliases
    )
    assert approved.execution.state is ExecutionState.PENDING


def test_a_gitlab_issue_still_allowed_is_created_once(
    db: Database, world: World, gitlab: GitLabWorld
) -> None:
    approved = approved_gitlab_issue(db, world, gitlab)
    # Another label allowed and another person mapped: what was approved is still allowed.
    gitlab.policy.change(alias(labels='"bug", "ops", "disk"', assignees="alice = 12, bob = 13"))
    gitlab.executor(db).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.SENT, after.detail
    [issue] = gitlab.fake.issues(42)
    assert issue["labels"] == ["bug"] and [p["id"] for p in issue["assignees"]] == [12, 13]


# --- github.issue and github.issue_create: repository, labels -----------------------------------


@pytest.fixture
def github(fake_github: FakeGitHubServer) -> Iterator[GitHubKitClient]:
    with GitHubKitClient(fake_github.url, SERVICE_TOKEN, timeout_seconds=2.0) as client:
        yield client


def approved_github(db: Database, world: World, kind: str) -> Any:
    if kind == "github.issue":
        proposal = proposals.create_proposal(
            db,
            world.requester(db),
            repository=world.repository,
            issue=1,
            comment="Thanks, looking into it.",
            labels=["bug"],
        )
    else:
        proposal = proposals.create_issue_proposal(
            db,
            world.requester(db),
            repository=world.repository,
            title="Widgets crash",
            body="They crash.",
            labels=["bug"],
            assignees=["octocat"],
        )
    return approvals.approve(db, world.approver(db), proposal.id, proposal.digest, 3600)


@pytest.mark.parametrize("kind", ["github.issue", "github.issue_create"])
def test_a_github_repository_removed_from_the_allowlist_is_refused(
    db: Database, world: World, fake_github: FakeGitHubServer, github: GitHubKitClient, kind: str
) -> None:
    approved = approved_github(db, world, kind)
    admin.remove_repository(db, "acme", world.repository)
    make_executor(db, github).run_due()
    refused(db, world, approved.execution.id, "acme/widgets is not on the allowlist")
    assert fake_github.writes_received == 0


@pytest.mark.parametrize("kind", ["github.issue", "github.issue_create"])
def test_a_github_label_deleted_from_the_repository_is_refused(
    db: Database, world: World, fake_github: FakeGitHubServer, github: GitHubKitClient, kind: str
) -> None:
    approved = approved_github(db, world, kind)
    fake_github.remove_repo_label(world.repository, "bug")
    make_executor(db, github).run_due()
    refused(db, world, approved.execution.id, "label bug does not exist in acme/widgets")
    assert fake_github.writes_received == 0
    assert fake_github.comments(world.repository, 1) == []


# --- email.send: mailbox, grant, recipients -----------------------------------------------------


@dataclass
class MailWorld:
    policy: Policy
    access: TenantMail
    smtp: FakeSmtpServer
    base: str

    def executor(self, db: Database) -> Executor:
        settings = GateSettings(lease_seconds=30.0, unavailable_retry_seconds=0.5)
        return Executor(db, None, settings, offered=gate_kinds.offered(self.access))  # type: ignore[arg-type]


@pytest.fixture
def mail(db: Database, world: World) -> Iterator[MailWorld]:
    with FakeSmtpServer() as smtp:
        base = mailbox_toml("acme", smtp.port)
        policy = Policy(base)
        access = TenantMail(
            db, Settings(mail=FAST), policy, TokenCipher(TokenCipher.generate_key())
        )
        set_grant(db, policy.file, "acme", "alex", granted=True)
        yield MailWorld(policy, access, smtp, base)


REQUEST = (
    f"From: Kim Park <kim@customer.example>\r\nTo: {MAILBOX}\r\nCc: lee@customer.example\r\n"
    "Subject: Where is my parcel?\r\nMessage-ID: <parcel-1@customer.example>\r\n"
    "Date: Tue, 01 Dec 2026 09:00:00 +0000\r\n\r\nHi, my parcel has not arrived. Kim\r\n"
).encode()


def approved_reply(db: Database, world: World, mail: MailWorld, *, receive: bool = True) -> Any:
    """A drafted reply to Kim, Cc the thread's Lee and ops@acme.example (an allowed domain);
    ``receive``: the mailbox received Kim's request (else it is only the drafter's word)."""
    drafts = MailDrafts(
        db, tenant_mailboxes(mail.policy.file, "acme"), MailSearcher(db, HashingEmbedder())
    )
    alex = world.approver(db)
    request = received(db, world.tenant.id, REQUEST) if receive else parse_message(REQUEST, "r")
    record, _ = drafts.draft(alex, MAILBOX, request)
    version = drafts.edit(
        alex,
        record.id,
        1,
        Edit(
            body="Hello Kim,\n\nYour parcel is on its way.\n",
            cc=("lee@customer.example", "ops@acme.example"),
        ),
    )
    assert version.findings == () and version.proposal_id is not None, version.findings
    proposal = proposals_view(db, world, version.proposal_id)
    rita = world.requester(db)  # alex drafted it: rita cannot approve; a second approver does
    assert rita is not None
    return approvals.approve(
        db,
        bea(db, mail),
        proposal["id"],
        proposal["digest"],
        3600,
        mailboxes=mail.access.configured_mailboxes,
    )


def proposals_view(db: Database, world: World, proposal_id: Any) -> dict[str, Any]:
    return proposals.describe(db, world.approver(db), proposal_id)


def bea(db: Database, mail: MailWorld) -> Any:
    from resolveflow.accounts.auth import authenticate
    from resolveflow.domain.records import Role

    token = admin.add_principal(db, "acme", "bea", [Role.APPROVER]).token
    set_grant(db, mail.policy.file, "acme", "bea", granted=True)
    return authenticate(db, token)


def test_a_recipient_whose_domain_is_no_longer_allowed_is_refused_and_nothing_is_sent(
    db: Database, world: World, mail: MailWorld
) -> None:
    approved = approved_reply(db, world, mail)
    mail.policy.change(mail.base.replace('allowed_domains = ["acme.example"]', ""))
    mail.executor(db).run_due()
    refused(db, world, approved.execution.id, "recipient ops@acme.example no longer allowed")
    assert mail.smtp.messages == []


def test_a_reply_to_a_request_never_received_rests_on_its_allowed_domain(
    db: Database, world: World, mail: MailWorld
) -> None:
    """Kim's request was pasted, never received: its addresses passed only because the policy
    allowed customer.example. Once it no longer does, nothing is sent (before: Kim and Lee were
    taken from the pasted request itself, and it was sent)."""
    allowed = 'allowed_domains = ["acme.example", "customer.example"]'
    mail.policy.change(mail.base.replace('allowed_domains = ["acme.example"]', allowed))
    approved = approved_reply(db, world, mail, receive=False)
    mail.policy.change(mail.base)
    mail.executor(db).run_due()
    refused(db, world, approved.execution.id, "recipients kim@customer.example")
    assert mail.smtp.messages == []


def test_a_drafted_reply_still_allowed_is_sent_once(
    db: Database, world: World, mail: MailWorld
) -> None:
    approved = approved_reply(db, world, mail)
    mail.executor(db).run_due()
    after = execution_state(db, world, approved.execution.id)
    assert after.state is ExecutionState.SENT, after.detail
    [sent] = mail.smtp.messages
    assert sorted(sent.rcpt_tos) == [
        "kim@customer.example",
        "lee@customer.example",
        "ops@acme.example",
    ]


def test_a_mailbox_removed_from_the_policy_is_refused(
    db: Database, world: World, mail: MailWorld
) -> None:
    approved = approved_reply(db, world, mail)
    mail.policy.change("")
    mail.executor(db).run_due()
    refused(db, world, approved.execution.id, f"mailbox {MAILBOX} is not one of the tenant's")
    assert mail.smtp.messages == []


def test_a_grant_revoked_after_approval_is_refused(
    db: Database, world: World, mail: MailWorld
) -> None:
    approved = approved_reply(db, world, mail)
    set_grant(db, mail.policy.file, "acme", "bea", granted=False)
    mail.executor(db).run_due()
    refused(db, world, approved.execution.id, f"no longer holds the grant for {MAILBOX}")
    assert mail.smtp.messages == []
