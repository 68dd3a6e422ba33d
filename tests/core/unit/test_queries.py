from __future__ import annotations

from importlib import resources

import pytest

from resolveflow.store.queries import load, parse_queries


def test_every_query_file_parses_and_names_are_unique() -> None:
    files = [
        entry.name.removesuffix(".sql")
        for entry in resources.files("resolveflow.store.sql").iterdir()
        if entry.name.endswith(".sql")
    ]
    assert files
    for group in files:
        queries = load(group)
        assert queries, group
        assert all(text.strip() for text in queries.values())


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        parse_queries("-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n")
