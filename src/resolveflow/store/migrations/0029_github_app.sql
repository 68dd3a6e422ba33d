-- GitHub App (issue 32): the App's credentials, its installations (each mapped to a tenant by an
-- operator), which installation covers a repository, and the installation tokens every process
-- shares. Secrets are encrypted by the application (store/token_cipher.py) with associated data
-- naming the App and the field, so a ciphertext moved to another row or column does not decrypt.
-- None of these tables holds a tenant's data (the App is the deployment's), so no row-level
-- security; the installation's tenant is a reference, read by the webhook receiver before it
-- knows any tenant.
CREATE TABLE github_app (
    app_id bigint PRIMARY KEY CHECK (app_id > 0),
    slug text NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,99}$'),
    client_id text NOT NULL DEFAULT '',
    private_key text NOT NULL CHECK (private_key ~ '^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+$'),
    webhook_secret text CHECK (webhook_secret ~ '^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+$'),
    client_secret text CHECK (client_secret ~ '^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+$'),
    created_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON github_app TO resolveflow_app;

CREATE TABLE github_app_installations (
    installation_id bigint PRIMARY KEY CHECK (installation_id > 0),
    account text NOT NULL,
    tenant_id uuid REFERENCES tenants (id) ON DELETE SET NULL,
    suspended boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON github_app_installations TO resolveflow_app;

-- Which installation covers a repository (GET /repos/{o}/{r}/installation, or the installation
-- events' repository lists), so a write's pace and token are found without asking GitHub again.
CREATE TABLE github_app_repositories (
    full_name text PRIMARY KEY CHECK (full_name ~ '^[^/\s]+/[^/\s]+$'),
    installation_id bigint NOT NULL,
    seen_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON github_app_repositories TO resolveflow_app;

-- One cached installation token per installation, encrypted; every process reads it and only the
-- holder of the row lock mints a new one when it is about to expire.
CREATE TABLE github_app_tokens (
    installation_id bigint PRIMARY KEY CHECK (installation_id > 0),
    ciphertext text CHECK (ciphertext ~ '^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+$'),
    expires_at timestamptz,
    minted integer NOT NULL DEFAULT 0 CHECK (minted >= 0)
);
GRANT SELECT, INSERT, UPDATE, DELETE ON github_app_tokens TO resolveflow_app;

-- Pacing keys on the installation when a write goes out with the App's token.
ALTER TABLE write_pace DROP CONSTRAINT write_pace_pace_key_check;
ALTER TABLE write_pace ADD CONSTRAINT write_pace_pace_key_check CHECK (
    pace_key ~ '^(github:service|github:installation:[0-9]{1,20}|github:approver:[0-9a-f]{16}|(gitlab|smtp):tenant:[0-9a-f-]{36})$'
);

-- One-time states of the manifest flow: `github-app manifest` issues one (kept as its SHA-256),
-- GitHub hands it back with the code, and the callback takes an App only with a state issued
-- here, unused and not expired: whoever merely reaches the callback with a code of their own
-- App cannot make it this deployment's.
CREATE TABLE github_app_manifest_states (
    state_hash text PRIMARY KEY CHECK (state_hash ~ '^[0-9a-f]{64}$'),
    expires_at timestamptz NOT NULL,
    used_at timestamptz
);
GRANT SELECT, INSERT, UPDATE ON github_app_manifest_states TO resolveflow_app;
