"""``reconcile --json`` names every execution it looked at, with its outcome (issue 26): one it
settled, and one it had to skip because the approver's own GitHub token, which the comment was
posted with, cannot be decrypted any more (the encryption key changed). Before, the skipped one
was left out of the report and the command exited 0, as if nothing were left to do."""

from __future__ import annotations

import json
import subprocess
import sys

from cryptography.fernet import Fernet

from fixtures_cli import Cli, _setup
from resolveflow.sandbox.forge.server import DropAfterWrite, FakeGitHubServer

REPO = "acme/widgets"


def test_a_skipped_execution_is_in_the_report_with_its_reason(
    cli: Cli, fake_github: FakeGitHubServer
) -> None:
    cli.env["RESOLVEFLOW_TOKEN_ENCRYPTION_KEY"] = Fernet.generate_key().decode()
    rita, alex = _setup(cli)
    fake_github.register_token("bea-token", "bea-on-github")
    bea = subprocess.run(
        [sys.executable, "-m", "resolveflow", "principals", "add", "--subject", "bea", "--role",
         "approver", "--github-token-stdin", "--quiet"],
        env=cli.env, input="bea-token\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bea.returncode == 0, bea.stderr
    executions = {}
    for approver, token in (("alex", alex), ("bea", bea.stdout.strip())):
        made = cli.json("proposals", "create", "--repo", REPO, "--issue", "1", "--comment",
                        f"Which version are you on? ({approver})", token=rita)  # fmt: skip
        approved = cli.json("approve", made["id"], "--digest", made["digest"], token=token)
        executions[approver] = approved["execution_id"]
    fake_github.inject(DropAfterWrite(), method="POST")
    fake_github.inject(DropAfterWrite(), method="POST")
    assert cli.run("execute", "--once", ok=False).returncode == 6  # both ended unknown
    assert {c["user"]["login"] for c in fake_github.comments(REPO, 1)} == {
        "resolveflow-bot",  # alex has no token of his own: the service token posted
        "bea-on-github",
    }

    # The key bea's token was stored with is gone: her comment cannot be checked now.
    cli.env["RESOLVEFLOW_TOKEN_ENCRYPTION_KEY"] = Fernet.generate_key().decode()
    done = cli.run("reconcile", "--json", ok=False)
    assert done.returncode == 6, done.stderr
    report = {row["execution_id"]: row for row in json.loads(done.stdout)}  # one document
    assert set(report) == set(executions.values())
    settled, skipped = report[executions["alex"]], report[executions["bea"]]
    assert (settled["state"], settled["outcome"]) == ("sent", "settled")
    assert (skipped["state"], skipped["outcome"]) == ("unknown", "skipped")
    assert skipped["detail"].startswith("could not reconcile: "), skipped
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert f"{executions['bea']} unknown: could not reconcile" in line, line
    assert "Traceback" not in done.stderr
    assert fake_github.writes_received == 2  # nothing was sent again

    text = cli.run("reconcile", ok=False)  # the same, for a person
    assert text.returncode == 6, text.stderr
    assert "skipped" in text.stdout and executions["bea"] in text.stdout
