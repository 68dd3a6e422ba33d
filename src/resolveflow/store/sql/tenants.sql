-- name: insert_tenant
INSERT INTO tenants (name) VALUES (%(name)s) RETURNING id, name

-- name: tenant_by_name
SELECT id, name FROM tenants WHERE name = %(name)s

-- name: list_tenants
SELECT id, name FROM tenants ORDER BY name

-- name: insert_principal
INSERT INTO principals (tenant_id, subject, roles, token_hash, github_token)
VALUES (%(tenant_id)s, %(subject)s, %(roles)s, %(token_hash)s, %(github_token)s)
RETURNING id, tenant_id, subject, roles, github_token IS NOT NULL AS has_github_token

-- name: principal_by_token_hash
SELECT id, tenant_id, subject, roles, github_token IS NOT NULL AS has_github_token
FROM principals
WHERE tenant_id = %(tenant_id)s AND token_hash = %(token_hash)s

-- name: principal_by_id
SELECT id, tenant_id, subject, roles, github_token IS NOT NULL AS has_github_token
FROM principals
WHERE tenant_id = %(tenant_id)s AND id = %(id)s

-- name: principal_by_subject
SELECT id, tenant_id, subject, roles, github_token IS NOT NULL AS has_github_token
FROM principals
WHERE tenant_id = %(tenant_id)s AND subject = %(subject)s

-- name: set_principal_roles
UPDATE principals SET roles = %(roles)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s
RETURNING id

-- name: list_principals
SELECT id, tenant_id, subject, roles, github_token IS NOT NULL AS has_github_token
FROM principals WHERE tenant_id = %(tenant_id)s ORDER BY subject

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
