-- name: ensure_bucket
-- A credential seen for the first time starts with a full bucket.
INSERT INTO write_pace (pace_key, tokens, refilled_at, next_at)
VALUES (%(pace_key)s, %(burst)s, clock_timestamp(), clock_timestamp())
ON CONFLICT (pace_key) DO NOTHING

-- name: lock_bucket
-- The row lock serializes every process's reservations for this credential until commit; the
-- database's clock is the one every process shares.
SELECT tokens, refilled_at, next_at, clock_timestamp() AS now
FROM write_pace WHERE pace_key = %(pace_key)s
FOR UPDATE

-- name: store_bucket
UPDATE write_pace
SET tokens = %(tokens)s, refilled_at = %(refilled_at)s, next_at = %(next_at)s
WHERE pace_key = %(pace_key)s

-- name: release_for_pace
-- Back to the queue until its slot, holding it; nothing was sent, so no rate-limit wait is counted.
UPDATE executions
SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, detail = %(detail)s,
    not_before = %(slot)s, pace_slot_at = %(slot)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s
  AND state = 'sending' AND lease_owner = %(owner)s
RETURNING *

-- name: use_held_slot
UPDATE executions SET pace_slot_at = NULL
WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND lease_owner = %(owner)s

-- name: database_now
SELECT clock_timestamp() AS now
