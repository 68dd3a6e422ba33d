-- Foundation: tenants, principals, repositories, runs, proposals, approvals, executions,
-- attempts and audit events, with row-level security and a non-superuser runtime role.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'resolveflow_app') THEN
        CREATE ROLE resolveflow_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    -- A non-superuser migrator must be a member to SET ROLE; superusers may already.
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('GRANT resolveflow_app TO %I', current_user);
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO resolveflow_app;

-- The tenant a transaction acts for; NULL when none is set, which matches no row.
CREATE FUNCTION rf_current_tenant() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT NULLIF(current_setting('resolveflow.tenant_id', true), '')::uuid $$;

CREATE TABLE tenants (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name text NOT NULL UNIQUE CONSTRAINT tenants_name_shape CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE principals (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    subject text NOT NULL CHECK (length(subject) BETWEEN 1 AND 100),
    roles text[] NOT NULL CHECK (
        cardinality(roles) > 0 AND roles <@ ARRAY['requester', 'approver', 'admin']::text[]
    ),
    token_hash text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),
    github_token text,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT principals_subject_unique UNIQUE (tenant_id, subject),
    CONSTRAINT principals_token_unique UNIQUE (token_hash)
);

CREATE TABLE repositories (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    full_name text NOT NULL CHECK (full_name = lower(full_name) AND full_name ~ '^[a-z0-9][a-z0-9-]*/[a-z0-9._-]+$'
        AND split_part(full_name, '/', 2) NOT IN ('.', '..')),
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT repositories_unique UNIQUE (tenant_id, full_name)
);

CREATE TABLE runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    workflow text NOT NULL,
    repository text,
    issue_number integer,
    requested_by uuid REFERENCES principals (id),
    status text NOT NULL,
    detail jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE proposals (
    id uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    lineage_id uuid NOT NULL,
    version integer NOT NULL CHECK (version >= 1),
    run_id uuid REFERENCES runs (id),
    action jsonb NOT NULL,
    digest text NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
    author_kind text NOT NULL CHECK (author_kind IN ('principal', 'workflow', 'model')),
    created_by uuid REFERENCES principals (id),
    note text,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT proposals_version_unique UNIQUE (lineage_id, version),
    CONSTRAINT proposals_binding UNIQUE (id, tenant_id, digest),
    CHECK (version > 1 OR lineage_id = id)
);

CREATE TABLE approvals (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    proposal_id uuid NOT NULL,
    digest text NOT NULL,
    decision text NOT NULL CHECK (decision IN ('approved', 'rejected')),
    principal_id uuid NOT NULL REFERENCES principals (id),
    reason text,
    decided_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    -- The database itself refuses an approval whose digest is not the proposal's.
    FOREIGN KEY (proposal_id, tenant_id, digest) REFERENCES proposals (id, tenant_id, digest),
    CONSTRAINT approvals_one_decision UNIQUE (proposal_id),
    CONSTRAINT approvals_binding UNIQUE (id, tenant_id, proposal_id, digest, decision),
    CHECK (decision = 'rejected' OR expires_at IS NOT NULL),
    CHECK (decision = 'approved' OR length(coalesce(reason, '')) > 0)
);

CREATE TABLE executions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    proposal_id uuid NOT NULL,
    approval_id uuid NOT NULL,
    digest text NOT NULL,
    approval_decision text NOT NULL DEFAULT 'approved' CHECK (approval_decision = 'approved'),
    idempotency_key text NOT NULL,
    state text NOT NULL DEFAULT 'pending' CHECK (
        state IN ('pending', 'sending', 'sent', 'partial', 'failed', 'unknown', 'not_sent')
    ),
    lease_owner text,
    lease_expires_at timestamptz,
    not_before timestamptz NOT NULL DEFAULT now(),
    rate_limit_waits integer NOT NULL DEFAULT 0,
    comment_id bigint,
    comment_url text,
    labels_done boolean NOT NULL DEFAULT false,
    detail text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    -- Only an approval (not a rejection) of exactly this digest can be executed.
    FOREIGN KEY (approval_id, tenant_id, proposal_id, digest, approval_decision)
        REFERENCES approvals (id, tenant_id, proposal_id, digest, decision),
    CONSTRAINT executions_one_per_proposal UNIQUE (proposal_id),
    CONSTRAINT executions_one_per_approval UNIQUE (approval_id)
);

-- One live execution per approved digest in a tenant. One that ended having written nothing
-- (failed, not_sent) leaves the index, so the same text can be approved and sent again later.
CREATE UNIQUE INDEX executions_idempotency_key ON executions (idempotency_key)
    WHERE state NOT IN ('failed', 'not_sent');

CREATE INDEX executions_due ON executions (not_before) WHERE state = 'pending';
CREATE INDEX executions_open ON executions (state) WHERE state IN ('sending', 'unknown');

-- Execution states only move forward; a finished execution never changes again.
CREATE FUNCTION rf_guard_execution_state() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (OLD.state, NEW.state) NOT IN (
        ('pending', 'pending'), ('pending', 'sending'),
        ('sending', 'sending'), ('sending', 'sent'), ('sending', 'partial'),
        ('sending', 'failed'), ('sending', 'unknown'), ('sending', 'pending'),
        ('unknown', 'unknown'), ('unknown', 'sent'), ('unknown', 'partial'),
        ('unknown', 'not_sent'), ('unknown', 'pending')
    ) THEN
        RAISE EXCEPTION 'execution % cannot move from % to %', OLD.id, OLD.state, NEW.state
            USING ERRCODE = 'RFX01';
    END IF;
    NEW.updated_at := clock_timestamp();
    RETURN NEW;
END
$$;

CREATE TRIGGER executions_state_guard BEFORE UPDATE ON executions
    FOR EACH ROW EXECUTE FUNCTION rf_guard_execution_state();

CREATE TABLE execution_attempts (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    execution_id uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    step text NOT NULL CHECK (step IN ('comment', 'labels')),
    owner text NOT NULL,
    credential text NOT NULL CHECK (credential IN ('approver', 'service')),
    started_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX execution_attempts_execution ON execution_attempts (execution_id);

-- An attempt's outcome is its own row so that both stay insert-only; one outcome per attempt.
CREATE TABLE attempt_outcomes (
    attempt_id uuid PRIMARY KEY REFERENCES execution_attempts (id) ON DELETE CASCADE,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    outcome text NOT NULL CHECK (
        outcome IN ('sent', 'rejected', 'rate_limited', 'unknown', 'unavailable')
    ),
    http_status integer,
    provider_ref text,
    message text,
    finished_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE audit_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor text NOT NULL,
    event text NOT NULL,
    subject_type text NOT NULL,
    subject_id text NOT NULL,
    run_id uuid,
    details jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX audit_events_subject ON audit_events (tenant_id, subject_type, subject_id, id);
CREATE INDEX audit_events_run ON audit_events (run_id, id) WHERE run_id IS NOT NULL;

-- Row-level security: the second line behind every query's own tenant predicate.
-- Every tenant table gets the same treatment; later migrations call this for theirs.
CREATE FUNCTION rf_isolate_tenant_tables(tables text[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY tables LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = rf_current_tenant()) '
            'WITH CHECK (tenant_id = rf_current_tenant())', t);
    END LOOP;
END
$$;

SELECT rf_isolate_tenant_tables(ARRAY[
    'principals', 'repositories', 'runs', 'proposals', 'approvals', 'executions',
    'execution_attempts', 'attempt_outcomes', 'audit_events'
]);

-- The runtime role: records that must never change get no UPDATE or DELETE at all.
GRANT SELECT, INSERT ON tenants TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (roles, github_token) ON principals TO resolveflow_app;
GRANT SELECT, INSERT, DELETE ON repositories TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (status, detail, updated_at) ON runs TO resolveflow_app;
GRANT SELECT, INSERT ON proposals, approvals, execution_attempts, attempt_outcomes, audit_events
    TO resolveflow_app;
GRANT SELECT, INSERT,
    UPDATE (state, lease_owner, lease_expires_at, not_before, rate_limit_waits,
            comment_id, comment_url, labels_done, detail, updated_at)
    ON executions TO resolveflow_app;
GRANT SELECT ON schema_migrations TO resolveflow_app;
