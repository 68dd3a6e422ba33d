-- name: insert_tenant
INSERT INTO tenants (name, scratch) VALUES (%(name)s, %(scratch)s) RETURNING id, name, scratch

-- name: tenant_by_name
SELECT id, name, scratch FROM tenants WHERE name = %(name)s

-- name: list_tenants
-- Scratch tenants too (an evaluation runs the real flows in one): the CLI leaves them out.
SELECT id, name, scratch FROM tenants ORDER BY name

-- name: insert_principal
-- A new principal has no GitHub token yet; one is saved afterwards (save_github_token).
INSERT INTO principals (tenant_id, subject, roles, token_hash)
VALUES (%(tenant_id)s, %(subject)s, %(roles)s, %(token_hash)s)
RETURNING id, tenant_id, subject, roles, false AS has_github_token

-- name: principal_by_token_hash
SELECT p.id, p.tenant_id, p.subject, p.roles,
       EXISTS (
           SELECT 1 FROM github_tokens t WHERE t.tenant_id = p.tenant_id AND t.principal_id = p.id
       ) AS has_github_token
FROM principals p
WHERE p.tenant_id = %(tenant_id)s AND p.token_hash = %(token_hash)s
  AND p.token_revoked_at IS NULL

-- name: principal_by_id
SELECT p.id, p.tenant_id, p.subject, p.roles,
       EXISTS (
           SELECT 1 FROM github_tokens t WHERE t.tenant_id = p.tenant_id AND t.principal_id = p.id
       ) AS has_github_token
FROM principals p
WHERE p.tenant_id = %(tenant_id)s AND p.id = %(id)s

-- name: principal_by_subject
SELECT p.id, p.tenant_id, p.subject, p.roles, p.token_revoked_at,
       EXISTS (
           SELECT 1 FROM github_tokens t WHERE t.tenant_id = p.tenant_id AND t.principal_id = p.id
       ) AS has_github_token
FROM principals p
WHERE p.tenant_id = %(tenant_id)s AND p.subject = %(subject)s

-- name: set_principal_roles
UPDATE principals SET roles = %(roles)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s
RETURNING id

-- name: revoke_token
-- Once: a revoked token stays revoked (a trigger refuses any later change, migration 0036).
UPDATE principals SET token_revoked_at = clock_timestamp()
WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND token_revoked_at IS NULL
RETURNING token_revoked_at

-- name: list_principals
SELECT p.id, p.tenant_id, p.subject, p.roles, p.token_revoked_at,
       EXISTS (
           SELECT 1 FROM github_tokens t WHERE t.tenant_id = p.tenant_id AND t.principal_id = p.id
       ) AS has_github_token
FROM principals p WHERE p.tenant_id = %(tenant_id)s ORDER BY p.subject

-- name: insert_repository
INSERT INTO repositories (tenant_id, full_name) VALUES (%(tenant_id)s, %(full_name)s)
RETURNING id, full_name

-- name: delete_repository
DELETE FROM repositories WHERE tenant_id = %(tenant_id)s AND full_name = %(full_name)s
RETURNING id

-- name: list_repositories
SELECT full_name FROM repositories WHERE tenant_id = %(tenant_id)s ORDER BY full_name

-- name: repository_allowed
SELECT EXISTS (
    SELECT 1 FROM repositories WHERE tenant_id = %(tenant_id)s AND full_name = %(full_name)s
) AS allowed

-- name: save_github_token
-- One row per principal: the latest token given (by a sign-in or by an operator) replaces the last.
INSERT INTO github_tokens (principal_id, tenant_id, github_login, ciphertext)
VALUES (%(principal_id)s, %(tenant_id)s, %(github_login)s, %(ciphertext)s)
ON CONFLICT (principal_id) DO UPDATE
    SET github_login = EXCLUDED.github_login, ciphertext = EXCLUDED.ciphertext,
        updated_at = clock_timestamp()

-- name: github_token
SELECT t.ciphertext, t.github_login, t.updated_at, p.subject
FROM github_tokens t
JOIN principals p ON p.tenant_id = t.tenant_id AND p.id = t.principal_id
WHERE t.tenant_id = %(tenant_id)s AND t.principal_id = %(principal_id)s

-- name: stored_github_tokens
SELECT t.principal_id, t.ciphertext, p.subject
FROM github_tokens t
JOIN principals p ON p.tenant_id = t.tenant_id AND p.id = t.principal_id
WHERE t.tenant_id = %(tenant_id)s AND t.ciphertext IS NOT NULL
ORDER BY p.subject

-- name: replace_github_token_ciphertext
-- Compare-and-set: a sign-in that replaced the token meanwhile wins over a re-encryption.
UPDATE github_tokens SET ciphertext = %(ciphertext)s
WHERE tenant_id = %(tenant_id)s AND principal_id = %(principal_id)s
  AND ciphertext IS NOT DISTINCT FROM %(previous)s
RETURNING principal_id

-- name: tokens_to_seal
-- As the owner only: the runtime role has no privilege on this table.
SELECT principal_id, tenant_id, secret, legacy_fernet FROM github_tokens_to_seal
WHERE tenant_id = %(tenant_id)s
ORDER BY principal_id

-- name: scope_to_tenant
SELECT set_config('resolveflow.tenant_id', %(tenant_id)s::text, true)

-- name: token_sealed
DELETE FROM github_tokens_to_seal
WHERE tenant_id = %(tenant_id)s AND principal_id = %(principal_id)s
