"""The README and docs/*.md say what the code does, checked against the code itself.

- Every relative link (``[text](path)``, ``![image](path)``, ``path#anchor``) names a file in the
  repository, and an anchor a heading of that file (GitHub's heading ids).
- Every ``resolveflow ...`` command shown (fenced blocks, inline code, and the first column of a
  ``| command |`` table, where the ``resolveflow`` is left out) names a real command path of the
  Click tree that ``resolveflow.cli.app`` builds, and every ``--option`` it shows is an option of
  that command.
- The ``toml`` blocks of docs/email.md load through the product's own policy parser
  (``parse_policy`` with the products' section checks, as ``load_policy`` reads
  ``RESOLVEFLOW_POLICY_FILE``), one sets every field of ``MailboxPolicy`` and one only the
  required ones, and its field table lists every field with its real default; the walkthrough's
  files (examples/mail/) are the page's block and a request the mail loader reads.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import typer.main
from pydantic.fields import FieldInfo
from typer._click import Context
from typer._click.core import Command
from typer.core import TyperGroup as Group

from resolveflow.bootstrap.policy import PRODUCT_SECTIONS
from resolveflow.cli import app
from resolveflow.mail.domain.mailbox import MailboxPolicy, tenant_mailboxes
from resolveflow.mail.loader import parse_message
from resolveflow.policy_file import parse_policy

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EMAIL = ROOT / "docs" / "email.md"
EXAMPLES = ROOT / "examples" / "mail"
MAILBOX_FIELDS_HEADING = "The mailbox's fields"

# --- reading Markdown ------------------------------------------------------------------------

FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Fence:
    line: int  # 1-based line of the opening fence
    info: str  # the language word, "" for none
    text: str


@dataclass(frozen=True)
class Shown:
    """A command as a page shows it: where, and its words after ``resolveflow``."""

    where: str
    words: str


def split_markdown(markdown: str) -> tuple[list[Fence], list[tuple[int, str]]]:
    """The fenced blocks, and the other lines with their 1-based numbers."""
    fences: list[Fence] = []
    prose: list[tuple[int, str]] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if opened is None:
            prose.append((index + 1, lines[index]))
            index += 1
            continue
        start, marker, body = index, opened.group(1), []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(marker):
            body.append(lines[index])
            index += 1
        fences.append(Fence(start + 1, opened.group(2).lower(), "\n".join(body)))
        index += 1
    return fences, prose


def fenced(path: Path, info: str) -> list[Fence]:
    return [f for f in split_markdown(path.read_text(encoding="utf-8"))[0] if f.info == info]


# --- links -----------------------------------------------------------------------------------


def github_anchors(markdown: str) -> set[str]:
    """The ids GitHub gives a page's headings: lower case, punctuation dropped, spaces to
    hyphens, ``-1``, ``-2`` ... for a repeated one."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in split_markdown(markdown)[1]:
        heading = HEADING.match(line)
        if heading is None:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(2)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def relative_links(path: Path) -> list[tuple[int, str]]:
    """The page's links that are not URLs, outside code, with their line numbers."""
    found: list[tuple[int, str]] = []
    for number, line in split_markdown(path.read_text(encoding="utf-8"))[1]:
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                found.append((number, target))
    return found


def dead_link(path: Path, target: str) -> str | None:
    """Why ``target`` (a link on ``path``) leads nowhere, or None."""
    file_part, _, anchor = target.partition("#")
    linked = (path.parent / file_part).resolve() if file_part else path
    if not linked.is_relative_to(ROOT):
        return f"{target}: outside the repository"
    if not linked.exists():
        return f"{target}: no such file in the repository"
    if not anchor or linked.suffix != ".md":
        return None
    if anchor not in github_anchors(linked.read_text(encoding="utf-8")):
        return f"{target}: {linked.relative_to(ROOT)} has no heading #{anchor}"
    return None


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_of_the_repository(page: Path) -> None:
    dead = [
        f"{page.relative_to(ROOT)}:{number}: {why}"
        for number, target in relative_links(page)
        if (why := dead_link(page, target)) is not None
    ]
    assert dead == []


def test_the_link_check_finds_a_dead_link_and_a_dead_anchor(tmp_path: Path) -> None:
    page = ROOT / "docs" / "cli.md"
    assert dead_link(page, "no-such-page.md") is not None
    assert dead_link(page, "../../outside.md") is not None
    assert dead_link(page, "errors.md#no-such-heading") is not None
    assert dead_link(page, "../README.md#install") is None
    assert github_anchors("## Drafts: the service, the `CLI`\n## Drafts: the service, the CLI") == {
        "drafts-the-service-the-cli",
        "drafts-the-service-the-cli-1",
    }


# --- commands --------------------------------------------------------------------------------

COMMAND_START = re.compile(r"(?<![\w./$-])resolveflow(?=[ \t])")
# One of alternatives (``add|remove``, ``--was-sent|--not-sent``); a lone "|" between spaces is a
# shell pipe and ends the command.
ALTERNATIVE = "\x1f"
SHELL_STOP = set("|;&()<>")


def shell_words(text: str) -> list[str]:
    """The words of one command, up to the end of its shell command (a pipe, ``)``, ``;``, a
    redirection, a comment); ``[optional]`` brackets dropped, ``a|b`` kept as alternatives."""
    text = re.sub(r"(?<=\S)\|(?=\S)", ALTERNATIVE, text.replace("\\|", "|"))
    text = re.sub(r"\s#.*", "", text).replace("[", " ").replace("]", " ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.commenters = ""
    lexer.whitespace_split = True
    words: list[str] = []
    try:
        for word in lexer:
            if set(word) <= SHELL_STOP:
                break
            words.append(word)
    except ValueError:  # a quote opened before "resolveflow" closes after it
        pass
    return words


def without_trailing_comment(line: str) -> str:
    """A shell line less its trailing comment (a ``#`` after a space, outside quotes). A line that
    is all comment stays: a block shows a command's printed output that way."""
    if line.lstrip().startswith("#"):
        return line
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and index > 0 and line[index - 1].isspace():
            return line[:index]
    return line


def shown_commands(path: Path) -> list[Shown]:
    fences, prose = split_markdown(path.read_text(encoding="utf-8"))
    name = str(path.relative_to(ROOT))
    shown = [found for fence in fences for found in fence_commands(name, fence)]
    return shown + prose_commands(name, prose)


def fence_commands(name: str, fence: Fence) -> list[Shown]:
    """Each ``resolveflow`` of a block's lines (continuations joined), up to a trailing comment."""
    shown: list[Shown] = []
    joined = re.sub(r"\\\n", " ", fence.text).split("\n")
    for offset, line in enumerate(map(without_trailing_comment, joined)):
        for start in COMMAND_START.finditer(line):
            where = f"{name}, block at line {fence.line}, line {offset + 1}"
            shown.append(Shown(where, line[start.end() :]))
    return shown


def prose_commands(name: str, prose: list[tuple[int, str]]) -> list[Shown]:
    """Inline code that is a command: ``resolveflow ...``; a top-level command and more words
    (``proposals edit --bcc``); anything in the first column of a ``| command |`` table."""
    root = command_tree()
    top_level = set(root.list_commands(Context(root)))
    shown: list[Shown] = []
    in_table = False
    for number, line in prose:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        if not line.lstrip().startswith("|"):
            cells = []
        in_table = bool(cells) and (in_table or cells[0] == "command")
        first_column = cells[0] if in_table and cells[0] != "command" else ""
        for match in CODE_SPAN.finditer(line):
            span = match.group(2)
            words = span.split()
            if span.startswith("resolveflow "):
                shown.append(Shown(f"{name}:{number}", span[len("resolveflow") :]))
            elif match.group(0) in first_column:
                shown.append(Shown(f"{name}:{number} (table)", " " + span))
            elif len(words) > 1 and words[0] in top_level:
                shown.append(Shown(f"{name}:{number} (inline)", " " + span))
    return shown


@cache
def command_tree() -> Group:
    root = typer.main.get_command(app)
    assert isinstance(root, Group)
    return root


def subcommand(group: Group, name: str) -> Command | None:
    return group.get_command(Context(group), name)


def option_names(command: Command) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return names


def command_errors(root: Group, words: list[str], path: str = "resolveflow") -> list[str]:
    """What in ``words`` (after ``resolveflow``) names no command or option of the tree."""
    command: Command = root
    for index, word in enumerate(words):
        if isinstance(command, Group) and not word.startswith("-"):
            names = word.split(ALTERNATIVE)
            if len(names) > 1:  # ``repos add|remove|list``: each, with the words after it
                return [
                    error
                    for name in names
                    for error in command_errors(
                        root, [*path.split()[1:], name, *words[index + 1 :]]
                    )
                ]
            found = subcommand(command, word)
            if found is None:
                return [f"`{path}` has no command {word!r}"]
            command, path = found, f"{path} {word}"
        elif word.startswith("-") and word != "-":
            for option in re.split(f"[{ALTERNATIVE}/]", word):
                name = option.split("=")[0].rstrip(".,;:")
                if name.startswith("-") and name not in option_names(command):
                    return [f"`{path}` has no option {name}"]
    return []


def every_shown_command() -> list[Shown]:
    return [shown for page in DOCS for shown in shown_commands(page)]


def test_every_command_shown_in_the_docs_is_a_real_command_with_real_options() -> None:
    root = command_tree()
    wrong = [
        f"{shown.where}: {error}  ({shown.words.strip()})"
        for shown in every_shown_command()
        for error in command_errors(root, shell_words(shown.words))
    ]
    assert wrong == []


def test_the_docs_show_commands_in_each_form_the_check_reads() -> None:
    shown = every_shown_command()
    places = {found.where.split(",")[0].split(":")[0] for found in shown}
    assert {"README.md", "docs/email.md", "docs/refine.md", "docs/cli.md"} <= places
    assert any(found.where.endswith("(table)") for found in shown)
    assert any(found.where.endswith("(inline)") for found in shown)


def test_the_command_check_reads_blocks_inline_code_and_command_tables() -> None:
    lines = [
        "Run `resolveflow execute --once` or `proposals edit ID --bcc A`; `ask` is one word,",
        "`the executor` no command.",
        "| command | what it does |",
        "|---|---|",
        "| `repos add\\|remove OWNER/REPO`, `reconcile` | `not a command` |",
    ]
    found = prose_commands("page.md", list(enumerate(lines, start=1)))
    assert [shown.words.strip() for shown in found] == [
        "execute --once",
        "proposals edit ID --bcc A",
        "repos add\\|remove OWNER/REPO",
        "reconcile",
    ]
    block = Fence(
        1,
        "bash",
        "X=$(resolveflow triage a/b#1 \\\n  --json)  # then resolveflow x\n"
        "# approve with: resolveflow approve ID --digest D",
    )
    assert [shell_words(shown.words) for shown in fence_commands("page.md", block)] == [
        ["triage", "a/b#1", "--json"],
        ["approve", "ID", "--digest", "D"],
    ]


@pytest.mark.parametrize(
    ("shown", "wrong"),
    [
        ("refine sandbox/widgets#3", "no command 'sandbox/widgets#3'"),
        ("mail drafs", "no command 'drafs'"),
        ("execute --onse", "no option --onse"),
        ("repos add|remove|lst OWNER/REPO", "no command 'lst'"),
        ("executions resolve ID --sent|--not-sent", "no option --sent"),
        ("mail edit ID --version 2 [--to/--cc/--bc A]", "no option --bc"),
    ],
)
def test_the_command_check_names_a_wrong_command_or_option(shown: str, wrong: str) -> None:
    [error] = command_errors(command_tree(), shell_words(" " + shown))
    assert wrong in error


def test_the_command_check_passes_real_forms() -> None:
    root = command_tree()
    for shown in (
        'approve "$(echo "$RUN" | field run_id)" --digest "$(echo "$RUN" | field digest)"',
        'sandbox start)"   # sets RESOLVEFLOW_GITHUB_API_URL',
        "refine run sandbox/widgets#3 --propose --json",
        "executions resolve ID --was-sent\\|--not-sent",
        "mail edit ID --version N [--body-file F] [--to/--cc/--bcc A]",
        "--help",
    ):
        assert command_errors(root, shell_words(" " + shown)) == [], shown


# --- the mailbox blocks of docs/email.md -----------------------------------------------------


def mailbox_tables(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``[tenants.T.mailboxes."address"]`` table of a TOML document."""
    return [
        table
        for tenant in document.get("tenants", {}).values()
        for table in tenant.get("mailboxes", {}).values()
    ]


def test_the_mailbox_blocks_of_the_email_page_load_through_the_policy_parser() -> None:
    blocks = fenced(EMAIL, "toml")
    assert len(blocks) >= 2, "docs/email.md lost its minimal and full mailbox blocks"
    used: list[set[str]] = []
    for block in blocks:
        where = f"docs/email.md block at line {block.line}"
        policy = parse_policy(block.text, where, PRODUCT_SECTIONS)  # a renamed field fails here
        tables = mailbox_tables(tomllib.loads(block.text))
        assert tables, f"{where} configures no mailbox"
        for tenant in policy.tenants:
            assert tenant_mailboxes(policy, tenant) or not policy.tenants[tenant].mailboxes
        used.extend(set(table) for table in tables)
    fields = MailboxPolicy.model_fields
    assert set(fields) in used, "no block of docs/email.md sets every field of MailboxPolicy"
    required = {name for name, info in fields.items() if info.is_required()}
    assert required in used, "no block of docs/email.md sets only the required fields"


def field_table(markdown: str, heading: str) -> dict[str, str]:
    """The first table after ``heading``: its first column's code span to its second cell."""
    _, prose = split_markdown(markdown)
    rows: dict[str, str] = {}
    after = False
    for _, line in prose:
        if HEADING.match(line):
            if rows:
                break
            after = heading in line
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        named = re.fullmatch(r"`(\w+)`", cells[0]) if after and len(cells) >= 2 else None
        if named is not None:
            rows[named.group(1)] = cells[1]
    return rows


def default_shown(cell: str) -> object:
    """A default as the table shows it: ``required``, ``unset`` (None), or a TOML value."""
    if cell == "required":
        return cell
    if cell == "unset":
        return None
    return tomllib.loads(f"value = {cell.strip('`')}")["value"]


def real_default(info: FieldInfo) -> object:
    if info.is_required():
        return "required"
    default = info.get_default(call_default_factory=True)
    return list(default) if isinstance(default, tuple) else default


def test_the_email_pages_field_table_lists_every_field_with_its_real_default() -> None:
    rows = field_table(EMAIL.read_text(encoding="utf-8"), MAILBOX_FIELDS_HEADING)
    fields = MailboxPolicy.model_fields
    assert set(rows) == set(fields)
    wrong = {
        name: (rows[name], real_default(info))
        for name, info in fields.items()
        if default_shown(rows[name]) != real_default(info)
    }
    assert wrong == {}


def test_the_walkthroughs_files_are_the_pages_block_and_a_readable_request() -> None:
    policy_text = (EXAMPLES / "policy.toml").read_text(encoding="utf-8")
    assert policy_text.strip() in [block.text.strip() for block in fenced(EMAIL, "toml")]
    policy = parse_policy(policy_text, "examples/mail/policy.toml", PRODUCT_SECTIONS)
    [(address, mailbox)] = tenant_mailboxes(policy, "acme").items()
    assert mailbox.security == "plain" and mailbox.smtp_host == "127.0.0.1"
    request = parse_message((EXAMPLES / "request.eml").read_bytes(), "request.eml")
    assert request.message_id and address in request.to
