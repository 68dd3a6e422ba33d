"""Typed rows: a query's result read straight into a dataclass (psycopg's ``class_row``), so no
``dict[str, Any]`` leaves the store and a renamed column fails at the first read, not later at a
caller's ``row["..."]``. The connection's own rows stay dicts for the store's internal reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, LiteralString, TypeVar

import psycopg
from psycopg.rows import class_row

# The runtime role's connections (dict rows) and the owner's, which migrations use.
AnyConnection = psycopg.Connection[Any]

R = TypeVar("R")


def one(
    conn: AnyConnection, row: type[R], query: LiteralString, params: Mapping[str, Any]
) -> R | None:
    """The query's first row as ``row`` (its fields named as the query's columns), or None."""
    with conn.cursor(row_factory=class_row(row)) as cursor:
        return cursor.execute(query, params).fetchone()


def every(
    conn: AnyConnection,
    row: type[R],
    query: LiteralString,
    params: Mapping[str, Any] | None = None,
    *,
    prepare: bool | None = None,
) -> list[R]:
    """All the query's rows as ``row``; ``prepare`` as psycopg's (False: never a generic plan)."""
    with conn.cursor(row_factory=class_row(row)) as cursor:
        return cursor.execute(query, params, prepare=prepare).fetchall()
