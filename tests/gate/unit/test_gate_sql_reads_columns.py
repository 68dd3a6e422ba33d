"""The gate reads a suggestion's score from a column (a triage part's ``score``, an
investigation's ``best_relevance``), never by parsing another product's JSON in its SQL."""

from pathlib import Path

import resolveflow.gate.store as gate_store

SQL = sorted(Path(gate_store.__file__).parent.glob("*.sql"))


def test_no_gate_query_parses_an_investigation_s_snippets() -> None:
    assert SQL
    for path in SQL:
        text = path.read_text(encoding="utf-8")
        assert "snippets" not in text, path.name
        assert "->> 'relevance'" not in text and "->>'relevance'" not in text, path.name
