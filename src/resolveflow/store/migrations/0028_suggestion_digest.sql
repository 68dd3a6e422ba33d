-- Quiet by default (issue 31, part 3): a product's suggestion whose kind goes to the digest in its
-- place (the policy file says `digest`, or its measured acceptance fell below the floor) is
-- recorded like any proposal, but listed in the daily digest instead of the inbox. The fact is
-- the lineage's, written by the gate in the transaction that records the first version
-- (gate/proposals.py), so an edit (a new version of the lineage) stays in the digest, and a person
-- who opens it decides it through the same gate and digest as any other.
CREATE TABLE digest_entries (
    lineage_id uuid PRIMARY KEY REFERENCES proposals (id) ON DELETE CASCADE,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    place text NOT NULL CHECK (length(place) BETWEEN 1 AND 400),
    kind text NOT NULL CHECK (
        kind IN ('rule_comment', 'duplicate', 'review_request', 'draft', 'refine_summary',
                 'new_issue')
    ),
    -- 'policy': the policy file says digest; 'acceptance': the automatic move, with the figures
    -- it was read from (approved as proposed or after an edit, out of decisions).
    why text NOT NULL CHECK (why IN ('policy', 'acceptance')),
    approved integer CHECK (approved >= 0),
    decisions integer CHECK (decisions >= 0),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK ((why = 'acceptance') = (decisions IS NOT NULL AND approved IS NOT NULL)),
    CHECK (approved IS NULL OR approved <= decisions)
);

CREATE INDEX digest_entries_day ON digest_entries (tenant_id, created_at DESC);

SELECT rf_isolate_tenant_tables(ARRAY['digest_entries']);
-- Written once, never changed: the runtime role may read and insert only.
GRANT SELECT, INSERT ON digest_entries TO resolveflow_app;
