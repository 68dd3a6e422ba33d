"""Short ids on the command line (issue 12, item 10): any unique prefix of 8 or more characters of
a run, proposal or execution id, with or without the dashes, within the principal's tenant; tables
show ids whole."""

from __future__ import annotations

import psycopg

from fixtures_cli import Cli, _setup
from resolveflow.sandbox.forge.server import FakeGitHubServer

TWIN_A = "abcdef12-0000-4000-8000-000000000001"
TWIN_B = "abcdef12-0000-4000-8000-000000000002"
ELSEWHERE = "abcdef99-0000-4000-8000-000000000003"


def _propose(cli: Cli, token: str, comment: str) -> dict[str, str]:
    return cli.json(  # type: ignore[no-any-return]
        "proposals",
        "create",
        "--repo",
        "acme/widgets",
        "--issue",
        "1",
        "--comment",
        comment,
        token=token,
    )


def _rename(database_url: str, old: str, new: str) -> None:
    """Give a proposal a chosen id (as the owner: ids are random, a shared prefix is not)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE proposals SET id = %s, lineage_id = %s WHERE id = %s", (new, new, old))


def test_a_prefix_names_proposals_executions_and_runs(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    rita, alex = _setup(cli)
    created = _propose(cli, rita, "short ids work")
    full = created["id"]
    for typed in (full[:8], full[:13], full.replace("-", "")[:12], full[:8] + "…", full.upper()):
        assert cli.json("proposals", "show", typed, token=alex)["id"] == full, typed
    approved = cli.json("approve", full[:10], "--digest", created["digest"], token=alex)
    assert approved["proposal_id"] == full
    assert cli.json("execute", "--once") == {"processed": 1}
    execution = approved["execution_id"]
    shown = cli.json("executions", "show", execution[:8], token=alex)
    assert (shown["id"], shown["state"]) == (execution, "sent")

    cli.fails("proposals", "show", full[:7], token=alex, match="at least 8 characters")
    cli.fails("proposals", "show", full[:9] + "x", token=alex, match="not a valid id")
    cli.fails("proposals", "show", full[:4] + "-" + full[4:8], token=alex, match="dashes go")
    missing = "0" * 8 if not full.startswith("0" * 8) else "f" * 8
    cli.fails("proposals", "show", missing, token=alex, match="no proposal has an id starting")
    cli.fails("executions", "show", missing, token=alex, match="no execution has an id starting")
    cli.fails("runs", "show", missing, token=alex, match="no run has an id starting")


def test_an_ambiguous_prefix_lists_the_matches_and_other_tenants_do_not_count(
    cli: Cli, database_url: str
) -> None:
    rita, alex = _setup(cli)
    first, second = _propose(cli, rita, "one"), _propose(cli, rita, "two")
    _rename(database_url, first["id"], TWIN_A)
    _rename(database_url, second["id"], TWIN_B)
    line = cli.fails("proposals", "show", "abcdef12", token=alex, match="ambiguous")
    assert TWIN_A in line and TWIN_B in line
    cli.fails("approve", "abcdef12-0000", "--digest", "a" * 64, token=alex, match="ambiguous")
    assert cli.json("proposals", "show", TWIN_B[:-1] + "2", token=alex)["id"] == TWIN_B
    assert cli.json("proposals", "show", TWIN_A.replace("-", ""), token=alex)["id"] == TWIN_A

    cli.json("tenants", "add", "other")
    eve = cli.json(
        "principals", "add", "--subject", "eve", "--role", "requester", "--tenant", "other"
    )["token"]
    cli.json("repos", "add", "acme/widgets", "--tenant", "other")
    theirs = _propose(cli, eve, "another tenant's")
    _rename(database_url, theirs["id"], ELSEWHERE)
    assert cli.json("proposals", "show", "abcdef99", token=eve)["id"] == ELSEWHERE
    cli.fails("proposals", "show", "abcdef99", token=alex, match="no proposal has an id starting")
    # alex's tenant sees only its own two, so its own prefix is not made ambiguous by eve's
    cli.fails("proposals", "show", "abcdef", token=alex, match="at least 8")


def test_tables_show_ids_whole_on_a_narrow_terminal(cli: Cli) -> None:
    rita, alex = _setup(cli)
    created = _propose(cli, rita, "a comment long enough to want the whole width of the table")
    approved = cli.json("approve", created["id"], "--digest", created["digest"], token=alex)
    principals = [p["id"] for p in cli.json("principals", "list")]
    tenants = [t["id"] for t in cli.json("tenants", "list")]
    cli.env["COLUMNS"] = "60"
    for args, wanted in (
        (("proposals", "list"), [created["id"]]),
        (("executions", "list"), [approved["execution_id"]]),
        (("principals", "list"), principals),
        (("tenants", "list"), tenants),
    ):
        out = cli.run(*args, token=alex).stdout
        for whole in wanted:
            assert whole in out, out
