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

-- name: upsert_user_token
INSERT INTO user_github_tokens (principal_id, tenant_id, github_login, ciphertext)
VALUES (%(principal_id)s, %(tenant_id)s, %(github_login)s, %(ciphertext)s)
ON CONFLICT (principal_id) DO UPDATE
    SET github_login = EXCLUDED.github_login, ciphertext = EXCLUDED.ciphertext,
        updated_at = clock_timestamp()

-- name: user_token
SELECT github_login, ciphertext, updated_at FROM user_github_tokens
WHERE tenant_id = %(tenant_id)s AND principal_id = %(principal_id)s
