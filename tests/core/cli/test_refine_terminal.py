"""``refine``'s human output shows the ticket's text, not the entities that make it inert in a
GitHub comment (issue 29: ``&#91;tinyq&#93;``, ``fixes &#35;3``, ``run&#95;at``); ``--json`` and
the comment a proposal would post keep the Markdown as it is."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fixtures_cli import Cli, InProcessCli
from resolveflow.cli.terminal_text import for_terminal
from resolveflow.domain.inert_markdown import code, inert

ENTITY = re.compile(r"&(?:#[0-9]+|#x[0-9a-f]+|[a-z][a-z0-9]*);", re.IGNORECASE)
TICKET = (
    "[tinyq] run_at is ignored by the scheduler (fixes #3?)\n\n"
    "Since 2.4 the job's run_at <b>field</b> & its *cron* are ignored: see www.example.org/x\n"
    "Traceback (most recent call last):\n"
    '  File "tinyq/schedule.py", line 12, in next_run\n'
)
PAST = [
    {"id": "3", "kind": "issue", "state": "closed", "title": "[tinyq] run_at ignored on restart",
     "body": "The scheduler drops run_at after a restart; fixes #2 did not cover it.",
     "labels": ["bug"], "created_at": "2024-03-01T10:00:00Z"},
    {"id": "5", "kind": "issue", "state": "closed", "title": "Cron & run_at <both> set",
     "body": "When a job has both a cron and a run_at, tinyq/schedule.py picks the cron.",
     "labels": ["bug"], "created_at": "2024-03-02T10:00:00Z"},
]  # fmt: skip


def test_refine_prints_the_ticket_s_words_and_json_keeps_the_markdown(
    cli: Cli, tmp_path: Path
) -> None:
    cli.env.update(RESOLVEFLOW_EMBEDDER="fake", COLUMNS="80")
    run = InProcessCli(cli.env)
    run.json("tenants", "add", "acme")
    corpus = tmp_path / "issues.jsonl"
    corpus.write_text("".join(json.dumps(record) + "\n" for record in PAST))
    run.run("index", "file", str(corpus), "--source", "github:acme/tinyq")
    ticket = tmp_path / "ticket.md"
    ticket.write_text(TICKET)

    shown = run.run("refine", str(ticket)).stdout
    assert ENTITY.findall(shown) == [], shown
    for said in ("[tinyq] run_at is ignored", "(fixes #3?)", "run_at ignored on restart",
                 "Cron & run_at <both> set"):  # fmt: skip
        assert said in shown, (said, shown)
    markdown = run.json("refine", str(ticket))["markdown"]
    # The Markdown a comment would carry is inert as before: the same text, as entities.
    assert "&#91;tinyq&#93; run&#95;at is ignored" in markdown
    assert for_terminal(markdown) == shown


def test_only_prose_is_unescaped_and_control_characters_are_dropped() -> None:
    prose = inert("[x] @bob see https://a.example & www.b.org; AT&T &amp; [:]", 200)
    assert prose.startswith("&#91;x&#93; @\u200dbob see https[:]//a")
    assert for_terminal(prose) == "[x] @bob see https://a.example & www.b.org; AT&T &amp; [:]"
    span = code("&#91;not an entity here&#93; @bob")
    fenced = "  ```diff\n  - &#35; kept\n  ```"
    said = for_terminal(f"- {span} and &#35;4\n{fenced}\nbell\x07 \x1b[2Jgone")
    assert said == f"- `&#91;not an entity here&#93; @bob` and #4\n{fenced}\nbell [2Jgone"
