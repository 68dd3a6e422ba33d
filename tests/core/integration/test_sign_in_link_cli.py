"""``resolveflow sign-in-link``: the link it prints points at the running ``serve``
(RESOLVEFLOW_WEB_PUBLIC_URL, else RESOLVEFLOW_WEB_HOST and _PORT), signs its principal in once,
and bad input is one line on stderr with the category's exit code."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from fixtures_cli import Cli, InProcessCli
from resolveflow.accounts import sign_in_links as links
from resolveflow.store.database import Database


def _setup(cli: Cli) -> InProcessCli:
    fast = InProcessCli(cli.env)
    fast.json("tenants", "add", "acme")
    fast.json("principals", "add", "--subject", "alex", "--role", "approver")
    return fast


def _token(url: str) -> str:
    return parse_qs(urlsplit(url).query)["token"][0]


def test_the_link_names_the_configured_address_and_signs_in_once(
    cli: Cli, database_url: str
) -> None:
    fast = _setup(cli)
    issued = cli.json("sign-in-link", "--subject", "alex")  # a real process, once
    assert issued["url"].startswith("http://127.0.0.1:8000/auth/link?token=rfl_")
    assert issued["tenant"] == "acme" and issued["ttl_minutes"] == 15
    public = InProcessCli({**cli.env, "RESOLVEFLOW_WEB_PUBLIC_URL": "https://rf.example.com/"})
    assert public.json("sign-in-link", "--subject", "alex")["url"].startswith(
        "https://rf.example.com/auth/link?token=rfl_"
    )
    everywhere = InProcessCli(
        {**cli.env, "RESOLVEFLOW_WEB_HOST": "0.0.0.0", "RESOLVEFLOW_WEB_PORT": "9000"}
    )
    quiet = everywhere.run("sign-in-link", "--subject", "alex", "-q").stdout.splitlines()
    assert len(quiet) == 1 and quiet[0].startswith("http://127.0.0.1:9000/auth/link?token=")
    shown = fast.run("sign-in-link", "--subject", "alex", "--ttl-minutes", "5").stdout
    assert "once, until" in shown and "needs sign-in with GitHub" in shown
    with Database(database_url) as db:
        assert links.sign_in(db, _token(issued["url"]), 60).principal.subject == "alex"
        with pytest.raises(links.LinkRefused, match="used already"):
            links.sign_in(db, _token(issued["url"]), 60)


def test_bad_input_is_one_line_with_its_exit_code(cli: Cli) -> None:
    fast = _setup(cli)
    for minutes in ("0", "61"):
        result = fast.run("sign-in-link", "--subject", "alex", "--ttl-minutes", minutes, ok=False)
        assert result.returncode == 2 and "1 to 60 minutes" in result.stderr
    missing = fast.run("sign-in-link", "--subject", "nobody", ok=False)
    assert missing.returncode == 3
    assert "principals add --subject nobody" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1 and "Traceback" not in missing.stderr
    both = fast.run("sign-in-link", "--subject", "alex", "-q", "--json", ok=False)
    assert both.returncode == 2
