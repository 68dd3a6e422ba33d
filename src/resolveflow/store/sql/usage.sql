-- name: consume_usage
-- One statement: increments only while under the limit, so concurrent requests cannot overshoot.
INSERT INTO usage_counters AS u (tenant_id, principal_id, day, kind, used)
SELECT %(tenant_id)s, %(principal_id)s, (clock_timestamp() AT TIME ZONE 'UTC')::date, %(kind)s, 1
WHERE %(limit)s > 0
ON CONFLICT (principal_id, day, kind) DO UPDATE SET used = u.used + 1
    WHERE u.used < %(limit)s
RETURNING used

-- name: usage_today
SELECT kind, used FROM usage_counters
WHERE tenant_id = %(tenant_id)s AND principal_id = %(principal_id)s
  AND day = (clock_timestamp() AT TIME ZONE 'UTC')::date
