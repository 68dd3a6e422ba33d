-- Ask's calibration per tenant (issue 28): where the tenant's own index puts off-topic questions
-- and its pages' own titles on the cosine scale, so that "close in meaning" is judged against the
-- tenant's corpus (ask/calibration.py). Recomputed when the index's space or size changes.
CREATE TABLE ask_calibrations (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    space_id integer NOT NULL REFERENCES embedding_spaces (id),
    chunk_count bigint NOT NULL CHECK (chunk_count >= 0),
    unrelated double precision NOT NULL CHECK (unrelated BETWEEN -1 AND 1),
    related double precision NOT NULL CHECK (related BETWEEN -1 AND 1),
    computed_at timestamptz NOT NULL DEFAULT now()
);

SELECT rf_isolate_tenant_tables(ARRAY['ask_calibrations']);
GRANT SELECT, INSERT, UPDATE ON ask_calibrations TO resolveflow_app;
