"""Markup the rendering drops or hides, and links whose text shows another address than
their target, in a text whose code is already masked."""

from __future__ import annotations

import re

from resolveflow.gate.domain.disclosure.blocks import ATTRIBUTE, DROPPED_MARKUP, OPEN_TAG
from resolveflow.gate.domain.disclosure.characters import excerpt
from resolveflow.gate.domain.disclosure.kinds import Finding, Hidden

_DROPPED = re.compile(DROPPED_MARKUP, re.DOTALL)
_TAG = re.compile(OPEN_TAG, re.DOTALL)
_DETAILS_SUMMARY = re.compile(
    r"\s*<summary\b[^>]{0,200}>(.{0,500}?)</summary\s*>", re.DOTALL | re.I
)
_DROPPED_TAGS = frozenset({"script", "style", "svg", "math", "template"})
_ANCHOR = re.compile(
    rf"<a\b(?P<attrs>{ATTRIBUTE}*)\s*>(?P<inner>.{{0,1000}}?)</a\s*>", re.DOTALL | re.I
)


_ONE_ATTRIBUTE = re.compile(
    r"""\s*(?P<name>[A-Za-z_:][A-Za-z0-9_.:-]*)"""
    r"""(?:\s*=\s*(?:"(?P<double>[^"]*)"|'(?P<single>[^']*)'|(?P<bare>[^\s"'=<>`]+)))?"""
)


def _attributes(attrs: str) -> dict[str, str]:
    """Name -> value (entities decoded); the first of a repeated name wins, as in browsers."""
    values: dict[str, str] = {}
    for match in _ONE_ATTRIBUTE.finditer(attrs):
        value = match.group("double") or match.group("single") or match.group("bare") or ""
        values.setdefault(match.group("name").lower(), _entities(value))
    return values


_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'", "period": ".", "sol": "/"}


def _entities(text: str) -> str:
    """Numeric character references and the few named ones that matter in an address."""

    def one(match: re.Match[str]) -> str:
        body = match.group(1)
        if body[0] == "#":
            code = int(body[2:], 16) if body[1] in "xX" else int(body[1:])
            return chr(code) if 0 < code < 0x110000 else match.group(0)
        return _NAMED.get(body.lower(), match.group(0))

    return re.sub(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});", one, text)


def _visible(markup: str) -> str:
    """Roughly the text a reader sees of some inline Markdown and HTML."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)|<[^>]*>|[*_~`]", "", markup)
    return " ".join(_entities(text).split())


def find_markup(found: list[Finding], field: str, masked: str) -> None:
    """Comments, dropped HTML, collapsed details, images and HTML links in ``masked``."""
    for match in _DROPPED.finditer(masked):
        found.append(Finding(Hidden.HTML_COMMENT, field, excerpt(match.group(0))))
    for tag in _TAG.finditer(masked):
        name, attrs = tag.group("name").lower(), _attributes(tag.group("attrs"))
        if name in _DROPPED_TAGS:
            found.append(Finding(Hidden.DROPPED_HTML, field, excerpt(masked[tag.start() :])))
        elif name == "details" and "open" not in attrs:
            summary = _DETAILS_SUMMARY.match(masked, tag.end())
            shown = _visible(summary.group(1)) if summary else masked[tag.end() : tag.end() + 200]
            found.append(Finding(Hidden.COLLAPSED_DETAILS, field, excerpt(shown or "(no summary)")))
        elif name == "img":
            source = attrs.get("src") or "(no address)"
            found.append(Finding(Hidden.IMAGE, field, excerpt(source)))
    for anchor in _ANCHOR.finditer(masked):
        href = _attributes(anchor.group("attrs")).get("href")
        _check_link(found, field, _visible(anchor.group("inner")), href)


# --- links: the address a text shows against the one it leads to ----------------------------

# Link text "counts as an address" with a scheme, with "www.", or ending in one of these: many
# country codes are also file extensions (README.md, setup.py), which are not addresses.
_TLDS = frozenset(
    {"com", "org", "net", "io", "dev", "app", "edu", "gov", "info", "ai", "co", "me", "xyz"}
    | {"cloud", "biz", "uk", "de", "fr", "eu", "jp", "cn", "ru", "ca", "au", "us", "nl", "ch"}
)
_ADDRESS = re.compile(
    r"^(?:(?P<scheme>[a-z][a-z0-9+.-]*)://)?(?:[^@/\s]*@)?(?P<host>(?:[a-z0-9-]+\.)+(?P<tld>[a-z]{2,63}))"
    r"\.?(?::\d+)?(?P<rest>[/?#]\S*)?$",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"^(?:mailto:)?([^@\s/]+@[^@\s/]+\.[a-z]{2,63})$", re.IGNORECASE)


def _site(host: str) -> str:
    host = host.lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


def _shown_address(text: str) -> tuple[str, str] | None:
    """(site, path) of a link text that reads as a web address, else None."""
    match = _ADDRESS.match(text.strip("<> "))
    if match is None:
        return None
    if not (
        match.group("scheme")
        or text.lower().startswith("www.")
        or match.group("tld").lower() in _TLDS
    ):
        return None
    return _site(match.group("host")), (match.group("rest") or "").split("#")[0].rstrip("/")


def _target(href: str) -> tuple[str, str]:
    """(site, path) of a link target; a relative or non-web target has no site."""
    match = re.match(
        r"^[a-z][a-z0-9+.-]*://(?:[^@/?#]*@)?([^/?#:]*)(?::\d+)?([^#]*)", href.strip(), re.I
    )
    if match is None:
        return "", href
    return _site(match.group(1)), match.group(2).rstrip("/")


def _check_link(found: list[Finding], field: str, text: str, href: str | None) -> None:
    if href is None:
        return
    shown_email, target_email = _EMAIL.match(text.strip("<> ")), _EMAIL.match(href.strip())
    if shown_email:
        misleading = (
            target_email is None or shown_email.group(1).lower() != target_email.group(1).lower()
        )
    elif (shown := _shown_address(text)) is not None:
        site, path = _target(href)
        misleading = site != shown[0] or (shown[1] != "" and shown[1] != path)
    else:
        return
    if misleading:
        found.append(Finding(Hidden.MISLEADING_LINK, field, excerpt(f"{text} → {href}")))


_DEFINITION = re.compile(
    r"^ {0,3}\[((?:[^\]\\\n]|\\.)+)\]:[ \t]*(<[^>\n]*>|\S+)[^\n]*$", re.MULTILINE
)


def _label(text: str) -> str:
    return " ".join(text.split()).casefold()


MAX_LINK_TEXT = 1000  # longer bracketed text is not taken for a link's text


def _bracket_pairs(text: str) -> list[tuple[int, int]]:
    """Matching ``[`` and ``]`` (innermost first), in one pass."""
    opened: list[int] = []
    pairs = []
    for i, ch in enumerate(text):
        if ch == "[":
            opened.append(i)
        elif ch == "]" and opened:
            start = opened.pop()
            if i - start <= MAX_LINK_TEXT:
                pairs.append((start, i))
    return sorted(pairs)


def _destination(text: str, start: int) -> str | None:
    """The target of an inline link whose ``(`` is at ``start``."""
    match = re.compile(r"\(\s*(?:<([^<>\n]*)>|((?:[^\s()]|\([^\s()]*\))*))").match(text, start)
    return (
        None
        if match is None
        else (match.group(1) if match.group(1) is not None else match.group(2))
    )


def find_links(found: list[Finding], field: str, masked: str) -> None:
    """Inline and reference links and images in Markdown; definitions nothing refers to."""
    definitions = {
        _label(m.group(1)): (m, m.group(2).strip("<>")) for m in _DEFINITION.finditer(masked)
    }
    body = _DEFINITION.sub(lambda m: " " * len(m.group(0)), masked)
    used: set[str] = set()
    for start, close in _bracket_pairs(body):
        text, after = body[start + 1 : close], body[close + 1 : close + 2]
        label = _label(text)
        if after == "(":
            href = _destination(body, close + 1)
        else:
            reference = re.compile(r"\[((?:[^\]\\\n]|\\.)*)\]").match(body, close + 1)
            label = (
                _label(reference.group(1)) if reference and reference.group(1).strip() else label
            )
            href = definitions[label][1] if label in definitions else None
            used.add(label)
        if start > 0 and body[start - 1] == "!":
            if href is not None:
                found.append(Finding(Hidden.IMAGE, field, excerpt(href)))
        else:
            _check_link(found, field, _visible(text), href)
    for label, (match, _) in definitions.items():
        if label not in used:
            found.append(Finding(Hidden.UNUSED_REFERENCE, field, excerpt(match.group(0))))
