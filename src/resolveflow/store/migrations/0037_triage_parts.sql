-- Each part of a triage run's result (labels, related issues, likely files, a request for the
-- missing facts...) is a record of its own: its score and floor in their own columns (the fitted
-- floors and the score bands read them, never the run's JSON), kept or left out with why, public
-- (in the proposal) or internal (shown to the team only), and its items. Written in the
-- transaction that records the run's proposal (its first version) or its no_action status, once:
-- a part is what the run found, so the runtime role may read and insert only.
CREATE TABLE triage_parts (
    run_id uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name text NOT NULL CHECK (
        name IN ('labels', 'related', 'duplicate', 'files', 'docs', 'missing_facts',
                 'failing_checks')
    ),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- the lineage (its first version) the run proposed; NULL: the run proposed nothing
    proposal_id uuid REFERENCES proposals (id) ON DELETE CASCADE,
    position smallint NOT NULL CHECK (position >= 0),
    -- the ``SuggestionKind`` its decisions count as; NULL: none (its decisions are the branch's)
    kind text CHECK (kind IS NULL OR length(kind) BETWEEN 1 AND 40),
    score double precision CHECK (score IS NULL OR score BETWEEN 0 AND 1),
    floor double precision CHECK (floor IS NULL OR floor BETWEEN 0 AND 1),
    kept boolean NOT NULL,
    left_out text CHECK (left_out IS NULL OR length(left_out) BETWEEN 1 AND 1000),
    public boolean NOT NULL,
    -- the Markdown it added to the proposal's comment, as proposed (NULL: none)
    paragraph text CHECK (paragraph IS NULL OR length(paragraph) <= 65536),
    -- [{"ref", "score", "why"}]: a label, an issue, a file, a missing fact
    items jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(items) = 'array'),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, name),
    CHECK (kept = (left_out IS NULL))
);

CREATE INDEX triage_parts_proposal ON triage_parts (tenant_id, proposal_id)
    WHERE proposal_id IS NOT NULL;

SELECT rf_isolate_tenant_tables(ARRAY['triage_parts']);
GRANT SELECT, INSERT ON triage_parts TO resolveflow_app;
