-- name: save_app
-- The manifest's callback stores what GitHub returned; a second App replaces the first (one App
-- per deployment), and its cached tokens go with it.
WITH gone AS (DELETE FROM github_app WHERE app_id <> %(app_id)s)
INSERT INTO github_app (app_id, slug, client_id, private_key, webhook_secret, client_secret)
VALUES (%(app_id)s, %(slug)s, %(client_id)s, %(private_key)s, %(webhook_secret)s, %(client_secret)s)
ON CONFLICT (app_id) DO UPDATE
SET slug = EXCLUDED.slug, client_id = EXCLUDED.client_id, private_key = EXCLUDED.private_key,
    webhook_secret = EXCLUDED.webhook_secret, client_secret = EXCLUDED.client_secret

-- name: forget_tokens
DELETE FROM github_app_tokens

-- name: stored_app
SELECT app_id, slug, client_id, private_key, webhook_secret, client_secret
FROM github_app ORDER BY created_at DESC LIMIT 1

-- name: record_installation
INSERT INTO github_app_installations (installation_id, account)
VALUES (%(installation_id)s, %(account)s)
ON CONFLICT (installation_id) DO UPDATE
SET account = EXCLUDED.account, suspended = false, updated_at = now()

-- name: note_installation
INSERT INTO github_app_installations (installation_id, account)
VALUES (%(installation_id)s, %(account)s)
ON CONFLICT (installation_id) DO NOTHING

-- name: installation_removed
UPDATE github_app_installations SET suspended = true, updated_at = now()
WHERE installation_id = %(installation_id)s

-- name: map_installation
INSERT INTO github_app_installations (installation_id, account, tenant_id)
VALUES (%(installation_id)s, %(account)s, %(tenant_id)s)
ON CONFLICT (installation_id) DO UPDATE
SET tenant_id = EXCLUDED.tenant_id, updated_at = now()
RETURNING installation_id, account, tenant_id, suspended

-- name: lock_installation
-- The installation and its tenant's name, locked until commit: two mappings of one installation
-- happen one after the other, the second seeing the first's.
SELECT i.installation_id, i.account, i.tenant_id, i.suspended, t.name AS tenant
FROM github_app_installations i LEFT JOIN tenants t ON t.id = i.tenant_id
WHERE i.installation_id = %(installation_id)s
FOR UPDATE OF i

-- name: installation
SELECT installation_id, account, tenant_id, suspended
FROM github_app_installations WHERE installation_id = %(installation_id)s

-- name: installations
SELECT i.installation_id, i.account, i.tenant_id, i.suspended, t.name AS tenant
FROM github_app_installations i LEFT JOIN tenants t ON t.id = i.tenant_id
ORDER BY i.installation_id

-- name: remember_repository
INSERT INTO github_app_repositories (full_name, installation_id)
VALUES (%(full_name)s, %(installation_id)s)
ON CONFLICT (full_name) DO UPDATE
SET installation_id = EXCLUDED.installation_id, seen_at = now()

-- name: covering_installation
-- The installation covering a repository and whose it is (NULL tenant: mapped to none; NULL
-- suspended: the installation itself was never recorded).
SELECT r.installation_id, i.tenant_id, i.suspended
FROM github_app_repositories r LEFT JOIN github_app_installations i USING (installation_id)
WHERE r.full_name = %(full_name)s

-- name: proposal_installation
-- The installation covering a proposal's repository (pacing keys on it); NULL when not known.
SELECT r.installation_id
FROM proposals p
JOIN github_app_repositories r ON r.full_name = p.action -> 'target' ->> 'repository'
WHERE p.tenant_id = %(tenant_id)s AND p.id = %(proposal_id)s

-- name: ensure_token_row
INSERT INTO github_app_tokens (installation_id) VALUES (%(installation_id)s)
ON CONFLICT (installation_id) DO NOTHING

-- name: cached_token
SELECT ciphertext, expires_at, minted, clock_timestamp() AS now
FROM github_app_tokens WHERE installation_id = %(installation_id)s

-- name: lock_token
-- Held until commit: the one process that finds the token about to expire mints the next one;
-- the others wait here and then read it.
SELECT ciphertext, expires_at, minted, clock_timestamp() AS now
FROM github_app_tokens WHERE installation_id = %(installation_id)s
FOR UPDATE

-- name: store_token
UPDATE github_app_tokens
SET ciphertext = %(ciphertext)s, expires_at = %(expires_at)s, minted = minted + 1
WHERE installation_id = %(installation_id)s

-- name: drop_token
-- A token GitHub refused: the next use mints a new one.
UPDATE github_app_tokens SET expires_at = NULL
WHERE installation_id = %(installation_id)s

-- name: issue_manifest_state
INSERT INTO github_app_manifest_states (state_hash, expires_at)
VALUES (%(state_hash)s, clock_timestamp() + make_interval(secs => %(seconds)s))

-- name: redeem_manifest_state
-- Once, and only before it expires: the row is marked used in the same statement.
UPDATE github_app_manifest_states SET used_at = clock_timestamp()
WHERE state_hash = %(state_hash)s AND used_at IS NULL AND expires_at > clock_timestamp()
RETURNING state_hash
