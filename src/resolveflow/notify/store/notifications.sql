-- name: enqueue
-- A row for every lineage whose latest version waits for a decision and has no row of this kind
-- yet: undecided, not superseded, not in the digest (digest_entries: told in the daily digest,
-- not one by one), its run (if any) paused for it, its window still open; for 'closing', within
-- remind_before_seconds of the window's close. The unique key makes a second scan a no-op.
INSERT INTO notifications (tenant_id, lineage_id, proposal_id, kind)
SELECT p.tenant_id, p.lineage_id, p.id, %(kind)s
FROM proposals p
LEFT JOIN runs r ON r.tenant_id = p.tenant_id AND r.id = p.run_id
WHERE p.tenant_id = %(tenant_id)s
  AND (p.run_id IS NULL OR r.status = 'awaiting_approval')
  AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.tenant_id = p.tenant_id AND a.proposal_id = p.id)
  AND NOT EXISTS (
      SELECT 1 FROM proposals newer
      WHERE newer.tenant_id = p.tenant_id AND newer.lineage_id = p.lineage_id
        AND newer.version > p.version
  )
  AND NOT EXISTS (
      SELECT 1 FROM digest_entries d WHERE d.tenant_id = p.tenant_id AND d.lineage_id = p.lineage_id
  )
  AND p.created_at + make_interval(secs => %(ttl_seconds)s) > clock_timestamp()
  AND p.created_at + make_interval(secs => %(ttl_seconds)s - %(remind_before_seconds)s)
      <= clock_timestamp()
ON CONFLICT (lineage_id, kind) DO NOTHING

-- name: drop_settled
-- Pending rows whose lineage no longer waits (decided, edited into a version that was decided,
-- its run moved on, or its window closed): nothing is sent about them.
UPDATE notifications n
SET state = 'dropped', lease_until = NULL, updated_at = clock_timestamp()
WHERE n.tenant_id = %(tenant_id)s AND n.state = 'pending'
  AND NOT EXISTS (
      SELECT 1 FROM proposals p
      LEFT JOIN runs r ON r.tenant_id = p.tenant_id AND r.id = p.run_id
      WHERE p.tenant_id = n.tenant_id AND p.lineage_id = n.lineage_id
        AND (p.run_id IS NULL OR r.status = 'awaiting_approval')
        AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.tenant_id = p.tenant_id AND a.proposal_id = p.id)
        AND NOT EXISTS (
            SELECT 1 FROM proposals newer
            WHERE newer.tenant_id = p.tenant_id AND newer.lineage_id = p.lineage_id
              AND newer.version > p.version
        )
        AND p.created_at + make_interval(secs => %(ttl_seconds)s) > clock_timestamp()
  )

-- name: claim_due
-- Due rows, each leased to this round and counted as an attempt before it is sent (a worker that
-- dies mid-send leaves an attempt spent and the row to the next round after the lease), with the
-- lineage's latest version: what the message is about.
WITH due AS (
    SELECT id FROM notifications
    WHERE tenant_id = %(tenant_id)s AND state = 'pending'
      AND next_attempt_at <= clock_timestamp()
      AND (lease_until IS NULL OR lease_until < clock_timestamp())
    ORDER BY next_attempt_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE notifications n
    SET attempts = n.attempts + 1,
        lease_until = clock_timestamp() + make_interval(secs => %(lease_seconds)s),
        updated_at = clock_timestamp()
    FROM due WHERE n.id = due.id
    RETURNING n.id, n.kind, n.attempts, n.lineage_id, n.tenant_id
)
SELECT c.id, c.kind, c.attempts, latest.id AS proposal_id, latest.action, latest.created_at,
       t.name AS tenant
FROM claimed c
JOIN tenants t ON t.id = c.tenant_id
JOIN LATERAL (
    SELECT p.id, p.action, p.created_at FROM proposals p
    WHERE p.tenant_id = c.tenant_id AND p.lineage_id = c.lineage_id
    ORDER BY p.version DESC LIMIT 1
) latest ON true
ORDER BY c.id

-- name: record_sent
UPDATE notifications
SET state = 'sent', sent_at = clock_timestamp(), lease_until = NULL, last_error = NULL,
    updated_at = clock_timestamp()
WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND state = 'pending'

-- name: record_failure
-- Past the last attempt the row is 'failed' for good; before it, due again after the backoff.
UPDATE notifications
SET state = CASE WHEN attempts >= %(max_attempts)s THEN 'failed' ELSE 'pending' END,
    last_error = %(error)s,
    next_attempt_at = clock_timestamp() + make_interval(secs => %(retry_seconds)s),
    lease_until = NULL,
    updated_at = clock_timestamp()
WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND state = 'pending'
RETURNING state

-- name: notifications_of
-- A tenant's rows, oldest first (the command and the tests).
SELECT id, lineage_id, proposal_id, kind, state, attempts, last_error, next_attempt_at, sent_at
FROM notifications WHERE tenant_id = %(tenant_id)s
ORDER BY created_at, kind

-- name: counts
-- Across tenants (migration 0032): a row per tenant and state.
SELECT state, notifications, retries, retrying, last_error, last_error_at
FROM rf_notification_counts()
