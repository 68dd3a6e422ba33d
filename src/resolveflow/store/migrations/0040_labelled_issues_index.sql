-- A repository's labelled issues, by when each was last indexed: the label model asks, before
-- each triage run, whether the labelled history it learned from has moved since (count and
-- newest indexed_at, triage/parts.py::LabelModels), and relearns only when it has. The partial
-- index keeps that question to the labelled issues of one source, whatever else the index holds.
CREATE INDEX documents_labelled_issues ON documents (tenant_id, source, indexed_at)
    WHERE kind = 'issue' AND cardinality(labels) > 0;
