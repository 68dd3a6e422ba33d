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


@cache
def load(group: str) -> dict[str, LiteralString]:
    text = resources.files("resolveflow.store.sql").joinpath(f"{group}.sql").read_text("utf-8")
    return parse_queries(text)


def q(group: str, name: str) -> LiteralString:
    try:
        return load(group)[name]
    except KeyError:
        raise KeyError(f"no query {name!r} in {group}.sql") from None
