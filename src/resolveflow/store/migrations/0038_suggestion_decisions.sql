-- A maintainer's decision, in GitHub itself, on a label or a close-as-duplicate that an approved
-- execution sent as a GitHub suggestion (`suggest: true`): accepted or dismissed, when, and by
-- whom. Seen through the `issues` webhook (with the sender's login) or read from
-- `GET .../issues/{n}/suggestions` (GitHub answers the resolver's id only). One row per
-- suggested part of one execution: a redelivered webhook, or a read after it, records nothing new
-- (gate/suggestion_decisions.py). These rows replace the approval's example of the same label in
-- the acceptance figures (gate/domain/suggestion_decisions.py).
CREATE TABLE suggestion_decisions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    execution_id uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    proposal_id uuid NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
    repository text NOT NULL CHECK (repository = lower(repository) AND length(repository) <= 200),
    issue bigint NOT NULL CHECK (issue > 0),
    part text NOT NULL CHECK (part IN ('label', 'duplicate')),
    -- the label as the proposal spelled it; '' for a close
    label text NOT NULL CHECK (length(label) <= 100 AND (part = 'label') = (label <> '')),
    outcome text NOT NULL CHECK (outcome IN ('accepted', 'dismissed')),
    decided_at timestamptz NOT NULL,
    decided_by text CHECK (length(decided_by) BETWEEN 1 AND 100),  -- the GitHub login, if known
    decided_by_id bigint CHECK (decided_by_id > 0),  -- GitHub's user id, when read
    seen_by text NOT NULL CHECK (seen_by IN ('webhook', 'read')),
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (decided_by IS NOT NULL OR decided_by_id IS NOT NULL),
    CONSTRAINT suggestion_decisions_once UNIQUE (tenant_id, execution_id, part, label)
);

CREATE INDEX suggestion_decisions_issue ON suggestion_decisions (tenant_id, repository, issue);
CREATE INDEX suggestion_decisions_day ON suggestion_decisions (tenant_id, decided_at DESC);

-- Every `issues` delivery that may be a decision looks up the issue's proposals sent as
-- suggestions: a small partial index on them, in the expressions the queries use.
CREATE INDEX proposals_suggested_issue ON proposals (
    tenant_id, lower(action -> 'target' ->> 'repository'), ((action -> 'target' ->> 'issue')::bigint)
) WHERE action ->> 'suggest' = 'true';

SELECT rf_isolate_tenant_tables(ARRAY['suggestion_decisions']);
-- A decision is written once and never changed.
GRANT SELECT, INSERT ON suggestion_decisions TO resolveflow_app;
