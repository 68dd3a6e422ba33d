-- name: save_gitlab_token
-- One token per tenant: the latest given replaces the last.
INSERT INTO gitlab_tokens (tenant_id, ciphertext)
VALUES (%(tenant_id)s, %(ciphertext)s)
ON CONFLICT (tenant_id) DO UPDATE
    SET ciphertext = EXCLUDED.ciphertext, updated_at = clock_timestamp()

-- name: gitlab_token
SELECT ciphertext FROM gitlab_tokens WHERE tenant_id = %(tenant_id)s
