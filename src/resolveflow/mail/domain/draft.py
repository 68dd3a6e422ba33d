"""A reply drafted without a model: the most similar past reply, its structure reused, its
specifics replaced by the staff's facts or by a visible placeholder ``[[order number]]``.

An old reply's amounts, dates, numbers, links and addresses belong to another customer; copied
as they are, they would be promises nobody made to this one. So each specific that the request,
the facts or the mailbox's signature does not supply is replaced by the fact that fits it (by
kind and by the fact's name), else by a placeholder the reviewer must fill, listed in
``missing_information``. The request and the examples are untrusted data: nothing in them
chooses a recipient (To is the requester, always) or a header.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from resolveflow.errors import InvalidInput, one_line
from resolveflow.mail.domain.addresses import mailbox_key
from resolveflow.mail.domain.entities import (
    PLACEHOLDER,
    Entity,
    EntityKind,
    allowed_keys,
    extract,
    is_allowed,
)
from resolveflow.mail.domain.mailbox import MailboxPolicy
from resolveflow.mail.domain.message import MailExample, MailMessage
from resolveflow.mail.domain.slots import fitting_fact, placeholder_name, request_reference

MAX_FACTS = 30
MAX_FACT_NAME_CHARS = 60
MAX_FACT_VALUE_CHARS = 500
MAX_FACTS_CHARS = 10_000
MAX_SUBJECT_CHARS = 255
_FACT_NAME = re.compile(r"^[^\W_][\w './&-]*$")
_REPLY_PREFIX = re.compile(r"^(?:re|aw|sv)\s*(?:\[\d+\])?\s*:", re.IGNORECASE)
# A reused reply that the replies to the other similar requests share less than this of
# (``agreement``: token F1 of content words) is no usual answer: the reviewer is asked to confirm
# it fits before it can be proposed. Chosen on mail-rhelp-dev, where a fifth of the drafts clear
# it (docs/email.md); the fit check and the other checks still apply above it.
AGREEMENT_FLOOR = 0.20
CONFIRM = "confirm that this past reply answers the request"


@dataclass(frozen=True)
class Facts:
    """Staff facts for one reply, ``name: value`` each, names in lower case, in the order given."""

    items: tuple[tuple[str, str], ...] = ()

    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.items)

    def values(self) -> tuple[str, ...]:
        return tuple(value for _, value in self.items)

    def get(self, name: str) -> str | None:
        return dict(self.items).get(_fact_name(name))


def _fact_name(name: str) -> str:
    return " ".join(name.lower().split())


def parse_facts(text: str) -> Facts:
    """``name: value`` lines (blank lines and ``#`` comments skipped), or one InvalidInput naming
    the first bad line. The text comes from a person's file or form: limits bound the prompt."""
    if len(text) > MAX_FACTS_CHARS:
        raise InvalidInput(f"the facts are {len(text)} characters; at most {MAX_FACTS_CHARS}")
    items: dict[str, str] = {}
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, colon, value = line.partition(":")
        name, value = _fact_name(name), value.strip()
        if not colon or not name or not value:
            raise InvalidInput(f"facts line {number} is not 'name: value': {one_line(line, 80)!r}")
        if len(name) > MAX_FACT_NAME_CHARS or not _FACT_NAME.match(name):
            raise InvalidInput(
                f"facts line {number}: a name is words (at most {MAX_FACT_NAME_CHARS} characters)"
            )
        if len(value) > MAX_FACT_VALUE_CHARS or any(ord(c) < 32 and c != "\t" for c in value):
            raise InvalidInput(
                f"facts line {number}: a value is one line of at most {MAX_FACT_VALUE_CHARS} "
                "characters"
            )
        if name in items:
            raise InvalidInput(f"facts line {number}: {name!r} is given twice")
        items[name] = value
    if len(items) > MAX_FACTS:
        raise InvalidInput(f"{len(items)} facts given; at most {MAX_FACTS}")
    return Facts(tuple(items.items()))


@dataclass(frozen=True)
class Draft:
    """A reply as drafted or edited. Addresses are bare and in lower case."""

    subject: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    bcc: tuple[str, ...]
    body: str
    in_reply_to: str | None
    references: tuple[str, ...]
    used_examples: tuple[str, ...]  # the reply Message-IDs the draft came from
    missing_information: tuple[str, ...]  # placeholder names the reviewer must fill


def placeholders(text: str) -> tuple[str, ...]:
    """The names of the ``[[...]]`` placeholders in ``text``, each once, in order (an edit that
    fills one should list the rest: ``missing_information=placeholders(body)``)."""
    return tuple(dict.fromkeys(" ".join(m.group(1).split()) for m in PLACEHOLDER.finditer(text)))


def reply_subject(subject: str) -> str:
    """ "Re: " and the request's subject, one line, not "Re: Re: ..."."""
    line = " ".join(subject.split())
    if not line:
        return "Re: your message"
    if not _REPLY_PREFIX.match(line):
        line = f"Re: {line}"
    return line[:MAX_SUBJECT_CHARS]


def first_name(message: MailMessage) -> str | None:
    """The requester's first name from the display name, when it looks like one."""
    name = (message.from_name or "").strip().strip("\"'")
    if not name or "@" in name:
        return None
    if "," in name:  # "Doe, Jane"
        name = name.split(",", 1)[1]
    words = name.split()
    if not words or not re.fullmatch(r"[^\W\d_][\w'’-]*", words[0]):
        return None
    return words[0][:40]


def deterministic_draft(
    request: MailMessage,
    mailbox: str,
    policy: MailboxPolicy,
    facts: Facts,
    examples: Sequence[MailExample],
) -> Draft:
    """A reply to ``request`` from ``mailbox`` without a model: the first example reused (the
    usual answer among the similar ones, ``agreement``), headed by ``[[CONFIRM]]`` when the
    similar requests were answered otherwise, else a skeleton with ``[[answer]]``."""
    name = first_name(request)
    allowed = allowed_keys(
        [
            request.subject,
            request.text,
            policy.signature,
            *facts.values(),
            *request.participants(),
            mailbox,
        ]
    )
    if examples:
        known = [
            e
            for e in extract(f"{request.subject}\n{request.text}")
            if e.kind is EntityKind.REFERENCE
        ]
        middle = _reuse(examples[0].reply_text, name, facts, allowed, known)
        agreement = examples[0].agreement
        if agreement is not None and agreement < AGREEMENT_FLOOR and middle != "[[answer]]":
            middle = f"[[{CONFIRM}]]\n\n{middle}"
        used: tuple[str, ...] = (examples[0].reply_message_id,)
    else:
        middle, used = "[[answer]]", ()
    parts = (policy.greeting_for(name).strip(), middle, policy.signature.strip())
    body = "\n\n".join(part for part in parts if part)
    return Draft(
        subject=reply_subject(request.subject),
        to=(mailbox_key(request.from_address),),
        cc=(),
        bcc=(),
        body=body,
        in_reply_to=request.message_id,
        references=request.thread_references(),
        used_examples=used,
        missing_information=placeholders(body),
    )


# --- reusing an old reply ---------------------------------------------------------------------

_GREETING = re.compile(
    r"^(?:hello|hi|hey|dear|good (?:morning|afternoon|evening)|greetings)\b[ \t]*(?P<name>[^,!:\n]*)"
    r"[,!:]?\s*$",
    re.IGNORECASE,
)
_SIGN_OFF = re.compile(
    r"^(?:(?:best|kind|warm|warmest)\s+(?:regards|wishes)|regards|best|thanks|thank you|"
    r"many thanks|cheers|sincerely|yours(?: sincerely| truly)?|all the best)\b[\w ]{0,20}[,.!]?$",
    re.IGNORECASE,
)
_QUOTE_START = re.compile(r"^(?:on .{0,200} wrote:|-{2,} ?original message ?-{2,}|-- )$", re.I)
# A signature that starts without the "-- " line: "-- Ann" (the dashes and the name on one line),
# or a line that is a name alone ("Ann Lee", "Bert Gunter") after a blank line, near the end.
_SIGNATURE_DASH = re.compile(r"^--\s?\S.{0,40}$")
_NAME_LINE = re.compile(r"^[^\W\d_][\w.'’-]*(?:\s+[^\W\d_][\w.'’-]*){0,3}$")
_SIGNATURE_LINES = 10  # where a signature is looked for: the last lines that hold text
_TITLES = {"mr", "mrs", "ms", "miss", "dr", "prof", "sir", "madam", "team", "all", "there"}


def _body_lines(reply: str) -> list[str]:
    """The reply without the quoted request and the signature block (``-- ``)."""
    lines: list[str] = []
    for line in reply.replace("\r\n", "\n").split("\n"):
        if _QUOTE_START.match(line.strip()) or line == "-- ":
            break
        if not line.lstrip().startswith(">"):
            lines.append(line.rstrip())
    return lines


def _cut_signature(lines: list[str]) -> list[str]:
    """The lines before a signature that starts without "-- " (never the first line of text)."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    for index in filled[1:][-_SIGNATURE_LINES:]:
        line = lines[index].strip()
        named = _NAME_LINE.match(line) and line[0].isupper() and not lines[index - 1].strip()
        if _SIGNATURE_DASH.match(line) or named:
            return lines[:index]
    return lines


def _strip_frame(lines: list[str]) -> tuple[list[str], list[str]]:
    """Greeting, sign-off and signature removed (the mailbox's own are used); the old customer's
    names."""
    lines = _cut_signature(lines)
    names: list[str] = []
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if filled and (match := _GREETING.match(lines[filled[0]].strip())):
        names = [w.strip(".") for w in match.group("name").split() if w.lower() not in _TITLES]
        lines = lines[filled[0] + 1 :]
    filled = [i for i, line in enumerate(lines) if line.strip()]
    for index in reversed(filled[-8:]):
        if _SIGN_OFF.match(lines[index].strip()):
            lines = lines[:index]
            break
    return lines, [n for n in names if len(n) > 1 and n[0].isupper()]


def reusable_text(reply: str) -> str:
    """What of a past reply a draft reuses: the reply without the request it quotes, its
    signature block, its greeting and its sign-off (the mailbox's own frame replaces them)."""
    lines, _ = _strip_frame(_body_lines(reply))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _reuse(
    reply: str, name: str | None, facts: Facts, allowed: frozenset[str], known: list[Entity]
) -> str:
    lines, old_names = _strip_frame(_body_lines(reply))
    middle = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    for old in old_names:
        middle = re.sub(rf"\b{re.escape(old)}\b", name or "[[customer name]]", middle)
    if not middle:
        return "[[answer]]"
    return _replace_specifics(middle, facts, allowed, known)


def _replace_specifics(
    text: str, facts: Facts, allowed: frozenset[str], known: list[Entity]
) -> str:
    """Each specific nobody supplied replaced by a fact, by the request's own order or ticket
    number, or by a placeholder; ``known`` are the request's references."""
    foreign = [e for e in extract(text) if not is_allowed(e, allowed)]
    chosen: dict[str, str] = {}  # entity key -> its replacement, so a repeated value stays one
    names_used: set[str] = set(placeholders(text))
    for entity in foreign:
        if entity.key in chosen:
            continue
        fact = fitting_fact(entity, text, facts.items, foreign) or request_reference(
            entity, known, foreign
        )
        if fact is not None:
            chosen[entity.key] = _as_written(entity, fact)
            continue
        base = placeholder_name(entity, text)
        label, count = base, 1
        while label in names_used:
            count += 1
            label = f"{base} {count}"
        names_used.add(label)
        chosen[entity.key] = f"[[{label}]]"
    for entity in sorted(foreign, key=lambda e: e.start, reverse=True):
        text = text[: entity.start] + chosen[entity.key] + text[entity.end :]
    return text


def _as_written(entity: Entity, value: str) -> str:
    if entity.text.startswith("#") and entity.kind is EntityKind.REFERENCE:
        return "#" + value.lstrip("#")
    return value
