-- name: insert_session
INSERT INTO web_sessions (tenant_id, principal_id, token_hash, csrf_token, expires_at)
VALUES (%(tenant_id)s, %(principal_id)s, %(token_hash)s, %(csrf_token)s,
        clock_timestamp() + make_interval(secs => %(ttl_seconds)s))
RETURNING id, expires_at

-- name: live_session
SELECT s.id, s.principal_id, s.csrf_token, s.expires_at
FROM web_sessions s
WHERE s.tenant_id = %(tenant_id)s AND s.token_hash = %(token_hash)s
  AND s.ended_at IS NULL AND s.expires_at > clock_timestamp()

-- name: end_session
UPDATE web_sessions SET ended_at = clock_timestamp()
WHERE tenant_id = %(tenant_id)s AND token_hash = %(token_hash)s AND ended_at IS NULL
RETURNING id
