-- Ids by prefix, for commands that accept a short id. A prefix covers one range of UUIDs
-- ([low, high], the prefix padded with 0s and with fs), so each query is a range scan of the
-- primary key; row-level security and the tenant test keep it inside the principal's tenant.

-- name: runs_by_prefix
SELECT id FROM runs
WHERE tenant_id = %(tenant_id)s AND id BETWEEN %(low)s AND %(high)s
ORDER BY id
LIMIT %(limit)s

-- name: proposals_by_prefix
SELECT id FROM proposals
WHERE tenant_id = %(tenant_id)s AND id BETWEEN %(low)s AND %(high)s
ORDER BY id
LIMIT %(limit)s

-- name: executions_by_prefix
SELECT id FROM executions
WHERE tenant_id = %(tenant_id)s AND id BETWEEN %(low)s AND %(high)s
ORDER BY id
LIMIT %(limit)s
