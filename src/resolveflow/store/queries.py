"""Named SQL queries loaded from the ``.sql`` files beside this module.

A file holds several queries, each introduced by ``-- name: some_name``. Values are always passed as
parameters; nothing here formats values into SQL text.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import LiteralString, cast

_NAME_LINE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def parse_queries(text: str) -> dict[str, LiteralString]:
    queries: dict[str, LiteralString] = {}
    parts = _NAME_LINE.split(text)
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        # Query text comes from files shipped in the package, never from input.
        queries[name] = cast(LiteralString, body.strip())
    return queries


def sql_file(group: str) -> tuple[str, str]:
    """The package and file name of a group: ``"tenants"`` is ``store/sql/tenants.sql`` (the
    shared tables); ``"mail/store/drafts"`` is ``mail/store/drafts.sql``, beside the product's
    store module that runs it."""
    folder, _, name = group.rpartition("/")
    package = "resolveflow." + folder.replace("/", ".") if folder else "resolveflow.store.sql"
    return package, f"{name}.sql"


@cache
def load(group: str) -> dict[str, LiteralString]:
    package, name = sql_file(group)
    return parse_queries(resources.files(package).joinpath(name).read_text("utf-8"))


def q(group: str, name: str) -> LiteralString:
    try:
        return load(group)[name]
    except KeyError:
        raise KeyError(f"no query {name!r} in {group}.sql") from None
