"""`approve` runs the named check "labels exist" for a proposal without a run too, reading the
repository's labels from GitHub at approval time (issue 12, item 7): a label that does not exist
is refused before anything is approved, and a GitHub that cannot be reached refuses the approval
("could not check labels"), never passes it. Real processes, real Postgres, the sandbox forge."""

from __future__ import annotations

from fixtures_cli import Cli, _setup
from resolveflow.sandbox.forge.faults import Status
from resolveflow.sandbox.forge.server import FakeGitHubServer

LABELS_READ = r"/repos/acme/widgets/labels"


def _proposed(cli: Cli, rita: str, *labels: str) -> dict[str, str]:
    what = [part for label in labels for part in ("--label", label)]
    return cli.json(  # type: ignore[no-any-return]
        "proposals", "create", "--repo", "acme/widgets", "--issue", "1", *what, token=rita
    )


def test_approve_refuses_a_label_the_repository_does_not_have(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    rita, alex = _setup(cli)
    proposal = _proposed(cli, rita, "bug", "no-such-label")
    result = cli.run(
        "approve", proposal["id"], "--digest", proposal["digest"], token=alex, ok=False
    )
    assert result.returncode == 4, result.stderr  # forbidden: the policy refuses it
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    assert line == "error: label no-such-label does not exist in acme/widgets", line
    assert cli.json("proposals", "show", proposal["id"], token=alex)["decision"] is None
    assert fake_github.writes_received == 0

    good = _proposed(cli, rita, "bug")
    approved = cli.json("approve", good["id"], "--digest", good["digest"], token=alex)
    assert approved["execution_state"] == "pending"


def test_approve_is_refused_when_the_labels_cannot_be_read(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    rita, alex = _setup(cli)
    proposal = _proposed(cli, rita, "bug")
    fake_github.inject(Status(503), method="GET", path=LABELS_READ)
    result = cli.run(
        "approve", proposal["id"], "--digest", proposal["digest"], token=alex, ok=False
    )
    assert result.returncode == 6, result.stderr  # unavailable
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("error: could not check labels: "), line
    assert fake_github.pending_faults == 0  # it did ask GitHub
    assert cli.json("proposals", "show", proposal["id"], token=alex)["decision"] is None

    # Without labels there is nothing to read: GitHub is not asked.
    bare = cli.json(
        "proposals",
        "create",
        "--repo",
        "acme/widgets",
        "--issue",
        "1",
        "--comment",
        "hi",
        token=rita,
    )
    cli.json("approve", bare["id"], "--digest", bare["digest"], token=alex)
