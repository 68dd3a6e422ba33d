"""A count with its noun in the right number: "1 earlier report", "2 earlier reports".

Text a person reads (a posted comment, an email, a command's line) never says "report(s)"."""

from __future__ import annotations


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``singular`` for one, else ``plural_form`` (default: ``singular`` + "s")."""
    if count == 1:
        return singular
    return plural_form if plural_form is not None else singular + "s"


def counted(count: int, singular: str, plural_form: str | None = None) -> str:
    """``count`` and its noun: ``counted(1, "check")`` is "1 check", ``counted(0, "check")``
    "0 checks"."""
    return f"{count} {plural(count, singular, plural_form)}"
