-- Triage runs: statuses that only move forward, evidence snapshots, classifications, run leases.
-- The LangGraph checkpoint tables are created by the migrator after this file (wiring.migrate);
-- they hold no tenant column and stay outside row-level security: a run's tenant is checked
-- against the RLS-protected runs table before any resume.

ALTER TABLE runs ADD CONSTRAINT runs_status CHECK (
    status IN ('running', 'awaiting_approval', 'executing', 'completed', 'no_action',
               'rejected', 'failed')
);

CREATE FUNCTION rf_guard_run_status() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.status <> NEW.status AND (OLD.status, NEW.status) NOT IN (
        ('running', 'awaiting_approval'), ('running', 'no_action'), ('running', 'failed'),
        ('awaiting_approval', 'executing'), ('awaiting_approval', 'rejected'),
        ('awaiting_approval', 'failed'),
        ('executing', 'completed'), ('executing', 'failed'), ('executing', 'awaiting_approval')
    ) THEN
        RAISE EXCEPTION 'run % cannot move from % to %', OLD.id, OLD.status, NEW.status
            USING ERRCODE = 'RFX01';
    END IF;
    NEW.updated_at := clock_timestamp();
    RETURN NEW;
END
$$;

CREATE TRIGGER runs_status_guard BEFORE UPDATE ON runs
    FOR EACH ROW EXECUTE FUNCTION rf_guard_run_status();

-- A run waiting on its execution settles when the execution does, whoever finished it (the run's
-- own resume, a background executor, reconciliation or a person).
CREATE FUNCTION rf_settle_run() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE runs r
    SET status = CASE WHEN NEW.state IN ('sent', 'partial') THEN 'completed' ELSE 'failed' END,
        detail = r.detail || jsonb_build_object('execution_state', NEW.state)
    FROM proposals p
    WHERE p.id = NEW.proposal_id AND p.tenant_id = NEW.tenant_id AND r.id = p.run_id
      AND r.tenant_id = NEW.tenant_id AND r.status = 'executing';
    RETURN NEW;
END
$$;

CREATE TRIGGER executions_settle_run AFTER UPDATE OF state ON executions
    FOR EACH ROW WHEN (NEW.state IN ('sent', 'partial', 'failed', 'not_sent')
                       AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION rf_settle_run();

CREATE INDEX runs_by_status ON runs (tenant_id, status, created_at DESC);

CREATE TABLE evidence_snapshots (
    run_id uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    raw jsonb NOT NULL,
    facts jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE run_classifications (
    run_id uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    classification text NOT NULL
        CHECK (classification IN ('deterministic', 'ai_investigation', 'human_review')),
    rule text NOT NULL,
    reason text NOT NULL,
    branch text NOT NULL CHECK (branch IN ('deterministic', 'ai_investigation', 'human_review')),
    route_reason text,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE run_leases (
    run_id uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    owner text NOT NULL,
    expires_at timestamptz NOT NULL
);

SELECT rf_isolate_tenant_tables(ARRAY['evidence_snapshots', 'run_classifications', 'run_leases']);

GRANT SELECT, INSERT ON evidence_snapshots, run_classifications TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON run_leases TO resolveflow_app;
