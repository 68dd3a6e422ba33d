"""``resolveflow mail import|forget`` in real processes: counts, idempotence, one-line errors."""

from __future__ import annotations

from pathlib import Path

from fixtures_cli import Cli

MAIL = Path(__file__).parents[2] / "data" / "mail"
POLICY = """
[tenants.acme.mailboxes."support@acme.example"]
smtp_host = "127.0.0.1"
security = "plain"

[tenants.acme.mailboxes."billing@acme.example"]
smtp_host = "127.0.0.1"
security = "plain"
"""


def test_mail_import_and_forget_from_the_cli(cli: Cli, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    cli.env.update(RESOLVEFLOW_POLICY_FILE=str(policy), RESOLVEFLOW_EMBEDDER="fake")
    assert cli.json("tenants", "add", "acme")["name"] == "acme"
    args = ("mail", "import", "--tenant", "acme", "--mailbox", "Support@acme.example")
    first = cli.run(*args, str(MAIL / "support-eml"))
    assert "examples indexed  2" in first.stdout
    assert first.stderr.strip().startswith("skipped ") and "no Message-ID" in first.stderr
    again = cli.json(*args, str(MAIL / "support-eml"))
    assert (again["read"], again["new"], again["known"], again["skipped"]) == (4, 0, 4, 1)
    assert again["examples_indexed"] == 0 and again["skipped_messages"][0]["reason"]
    billing = ("mail", "import", "--tenant", "acme", "--mailbox", "billing@acme.example")
    assert cli.json(*billing, str(MAIL / "billing.mbox"))["examples"] == 2
    # The ordinary search never shows an email (the tenant's index holds nothing else).
    assert cli.json("search", "refund the double charge on my card", "--tenant", "acme") == []
    forgot = cli.json(
        "mail", "forget", "--mailbox", "billing@acme.example", "<rep-refund@acme.example>"
    )
    assert forgot["removed"] == ["<rep-refund@acme.example>"]
    cli.fails("mail", "forget", "--mailbox", "billing@acme.example", "<nope@x.example>",
              match="no message <nope@x.example> in mailbox billing@acme.example")  # fmt: skip
    cli.fails(*billing[:4], "--mailbox", "sales@acme.example", str(MAIL / "billing.mbox"),
              match="sales@acme.example is not a mailbox of tenant acme")  # fmt: skip
    cli.fails(*args, str(tmp_path / "missing.mbox"), match="no such file or folder")
