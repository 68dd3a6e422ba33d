-- Notifications (issue 32, part 4): a chat or JSON webhook is told when a proposal waits for a
-- decision ('waiting') and again before its approval window closes ('closing'). The worker's
-- periodic scan (notify/notifier.py) writes a row per lineage and kind, so the unique key makes
-- each message go out once however often or in how many workers the scan runs; the row then
-- carries the delivery: bounded attempts, the next one's time, the last error in our own words
-- (never the webhook's URL or answer), and a short lease so that two workers do not send the same
-- row at once. A message is never an approval: it carries the inbox link only.
CREATE TABLE notifications (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    lineage_id uuid NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
    proposal_id uuid NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,  -- the version told
    kind text NOT NULL CHECK (kind IN ('waiting', 'closing')),
    -- pending: to send (again); sent; failed: gave up after the last attempt; dropped: decided,
    -- or its window closed, before it went out.
    state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed', 'dropped')),
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text CHECK (length(last_error) <= 400),
    next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_until timestamptz,
    sent_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT notifications_once UNIQUE (lineage_id, kind),
    CHECK ((state = 'sent') = (sent_at IS NOT NULL))
);

CREATE INDEX notifications_due ON notifications (tenant_id, next_attempt_at) WHERE state = 'pending';

SELECT rf_isolate_tenant_tables(ARRAY['notifications']);
GRANT SELECT, INSERT,
    UPDATE (state, attempts, last_error, next_attempt_at, lease_until, sent_at, updated_at)
    ON notifications TO resolveflow_app;

-- What /readyz and /metrics read across tenants, as rf_metric_counts does (migration 0019):
-- each tenant visited with its setting set, counts and our own error words only, a row per
-- tenant and state (the caller adds them up).
CREATE FUNCTION rf_notification_counts() RETURNS TABLE (
    state text, notifications bigint, retries bigint, retrying bigint,
    last_error text, last_error_at timestamptz
)
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT id FROM tenants LOOP
        PERFORM set_config('resolveflow.tenant_id', t.id::text, true);
        RETURN QUERY
            SELECT n.state, count(*),
                   coalesce(sum(greatest(n.attempts - 1, 0)), 0)::bigint,
                   count(*) FILTER (WHERE n.state = 'pending' AND n.attempts > 0),
                   (array_agg(n.last_error ORDER BY n.updated_at DESC)
                       FILTER (WHERE n.last_error IS NOT NULL))[1],
                   max(n.updated_at) FILTER (WHERE n.last_error IS NOT NULL)
            FROM notifications n GROUP BY n.state;
    END LOOP;
    PERFORM set_config('resolveflow.tenant_id', '', true);
END
$$;

GRANT EXECUTE ON FUNCTION rf_notification_counts() TO resolveflow_app;
