-- The web app, webhooks, the worker and sign-in: webhook deliveries (insert-only, global, because
-- a delivery arrives before anyone knows its tenant), per-tenant webhook claims, browser sessions,
-- users' GitHub tokens (encrypted by the application before they reach this table) and daily
-- usage counters. The job queue's own tables come from procrastinate (store/queue.py).

CREATE TABLE webhook_deliveries (
    delivery_id text PRIMARY KEY CHECK (length(delivery_id) BETWEEN 1 AND 200),
    event text NOT NULL CHECK (length(event) BETWEEN 1 AND 100),
    action text CHECK (action IS NULL OR length(action) <= 100),
    repository text CHECK (repository IS NULL OR length(repository) <= 200),
    issue_number integer CHECK (issue_number IS NULL OR issue_number > 0),
    queued boolean NOT NULL,
    received_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One triage run per (delivery, tenant): a retried job finds its claim and starts nothing.
CREATE TABLE webhook_run_claims (
    delivery_id text NOT NULL REFERENCES webhook_deliveries (delivery_id),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    claimed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (delivery_id, tenant_id)
);

-- A session cookie is rf_<tenant hex>_<secret>, like an API token, so it is looked up inside its
-- tenant's row-level-security scope; only its SHA-256 is stored.
CREATE TABLE web_sessions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    principal_id uuid NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    token_hash text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),
    csrf_token text NOT NULL CHECK (length(csrf_token) >= 32),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at timestamptz NOT NULL,
    ended_at timestamptz,
    CONSTRAINT web_sessions_token_unique UNIQUE (token_hash),
    CHECK (expires_at > created_at)
);

-- The user's own GitHub token, encrypted (Fernet) by the application; the key never reaches the
-- database. One row per principal, replaced at each sign-in.
CREATE TABLE user_github_tokens (
    principal_id uuid PRIMARY KEY REFERENCES principals (id) ON DELETE CASCADE,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    github_login text NOT NULL CHECK (length(github_login) BETWEEN 1 AND 100),
    ciphertext text NOT NULL CHECK (ciphertext LIKE 'gAAAA%'),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Daily per-principal usage; the increment refuses to pass the limit in the same statement.
CREATE TABLE usage_counters (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    principal_id uuid NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    day date NOT NULL,
    kind text NOT NULL CHECK (kind IN ('runs', 'model_calls')),
    used integer NOT NULL CHECK (used >= 0),
    PRIMARY KEY (principal_id, day, kind)
);

SELECT rf_isolate_tenant_tables(ARRAY['webhook_run_claims', 'web_sessions', 'user_github_tokens', 'usage_counters']);

GRANT SELECT, INSERT ON webhook_deliveries, webhook_run_claims TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (ended_at) ON web_sessions TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (github_login, ciphertext, updated_at) ON user_github_tokens
    TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (used) ON usage_counters TO resolveflow_app;
