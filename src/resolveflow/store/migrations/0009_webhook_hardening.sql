-- Webhook hardening (issue 11): each delivery says why it was not acted on; an event is acted on
-- once even under a fresh delivery id; a tenant may have its own webhook secret; old deliveries
-- are pruned by age.

-- A delivery is either queued or ignored, with the reason. Deliveries recorded before this
-- migration that queued nothing get a reason that says so.
ALTER TABLE webhook_deliveries
    ADD COLUMN tenant_id uuid REFERENCES tenants (id) ON DELETE CASCADE,
    ADD COLUMN ignored text CHECK (ignored IS NULL OR length(ignored) BETWEEN 1 AND 500);
UPDATE webhook_deliveries SET ignored = 'not acted on (recorded before reasons were kept)'
    WHERE NOT queued;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_queued_or_ignored
    CHECK (queued = (ignored IS NULL));
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);

-- The events acted on, one row each: the database refuses a second row for the same event, so a
-- captured body sent again under a fresh delivery id starts nothing. The scope is the secret that
-- signed it (a tenant's, or NULL for the global one). subject tells apart what one issue's events
-- of the same action and second concern ('comment:ID', 'label:NAME' or ''); updated_at is the
-- latest of the issue's and the comment's updated_at.
CREATE TABLE webhook_events (
    tenant_id uuid REFERENCES tenants (id) ON DELETE CASCADE,
    event text NOT NULL CHECK (length(event) BETWEEN 1 AND 100),
    repository text NOT NULL CHECK (length(repository) BETWEEN 1 AND 200),
    issue_number integer NOT NULL CHECK (issue_number > 0),
    action text NOT NULL CHECK (length(action) BETWEEN 1 AND 100),
    subject text NOT NULL CHECK (length(subject) <= 300),
    updated_at timestamptz NOT NULL,
    delivery_id text NOT NULL CHECK (length(delivery_id) BETWEEN 1 AND 200),
    CONSTRAINT webhook_events_once UNIQUE NULLS NOT DISTINCT
        (tenant_id, event, repository, issue_number, action, subject, updated_at)
);
CREATE INDEX webhook_events_age ON webhook_events (updated_at);

-- A run claim goes with its delivery when the delivery is pruned (nothing retries that old).
ALTER TABLE webhook_run_claims DROP CONSTRAINT webhook_run_claims_delivery_id_fkey;
ALTER TABLE webhook_run_claims ADD CONSTRAINT webhook_run_claims_delivery_id_fkey
    FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries (delivery_id) ON DELETE CASCADE;

-- A tenant's own webhook secret, encrypted by the application with RESOLVEFLOW_TOKEN_ENCRYPTION_KEY
-- (store/token_cipher.py, bound to its tenant); the key never reaches the database. Kept
-- retrievably because verifying an HMAC needs the secret itself.
CREATE TABLE webhook_secrets (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    ciphertext text NOT NULL CHECK (length(ciphertext) BETWEEN 20 AND 2000),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
SELECT rf_isolate_tenant_tables(ARRAY['webhook_secrets']);

-- A delivery received on a tenant's URL, and its event's claim, belong to that tenant: row-level
-- security shows them to that tenant only; rows of the global hook (tenant_id NULL) to everyone.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['webhook_deliveries', 'webhook_events'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_or_global ON %I '
            'USING (tenant_id IS NULL OR tenant_id = rf_current_tenant()) '
            'WITH CHECK (tenant_id IS NULL OR tenant_id = rf_current_tenant())', t);
    END LOOP;
END
$$;

-- Pruning by age is the only deletion the runtime role can make here, and never younger than
-- three days (GitHub offers redelivery for three days). Row-level security binds this function's
-- owner too (FORCE), so it prunes each tenant's rows in that tenant's scope (global rows are
-- visible in every scope), then puts the caller's scope back. Executions, attempts, approvals
-- and audit events are not touched: nothing prunes them.
CREATE FUNCTION rf_prune_webhook_deliveries(p_older_than interval) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
DECLARE
    caller_scope text := current_setting('resolveflow.tenant_id', true);
    scope uuid;
    gone bigint := 0;
    n bigint;
BEGIN
    IF p_older_than < interval '3 days' THEN
        RAISE EXCEPTION 'webhook deliveries are kept at least 3 days' USING ERRCODE = '22023';
    END IF;
    FOR scope IN SELECT NULL::uuid UNION ALL SELECT id FROM tenants LOOP
        PERFORM set_config('resolveflow.tenant_id', coalesce(scope::text, ''), true);
        DELETE FROM webhook_events WHERE updated_at < clock_timestamp() - p_older_than;
        DELETE FROM webhook_deliveries WHERE received_at < clock_timestamp() - p_older_than;
        GET DIAGNOSTICS n = ROW_COUNT;
        gone := gone + n;
    END LOOP;
    PERFORM set_config('resolveflow.tenant_id', coalesce(caller_scope, ''), true);
    RETURN gone;
END
$$;
REVOKE ALL ON FUNCTION rf_prune_webhook_deliveries(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION rf_prune_webhook_deliveries(interval) TO resolveflow_app;

GRANT SELECT, INSERT ON webhook_events TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (ciphertext, updated_at), DELETE ON webhook_secrets TO resolveflow_app;
