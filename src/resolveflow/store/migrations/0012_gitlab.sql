-- GitLab (issue 13): each tenant's GitLab token, encrypted by the application like the principals'
-- GitHub tokens (AES-256-GCM, store/token_cipher.py), with the tenant's id as associated data, so
-- a ciphertext copied into another tenant's row does not decrypt. The key never reaches the
-- database. The action kind gitlab.issue_create writes in one step, 'create', which 0008 allows.
CREATE TABLE gitlab_tokens (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    ciphertext text NOT NULL CHECK (ciphertext ~ '^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
SELECT rf_isolate_tenant_tables(ARRAY['gitlab_tokens']);
GRANT SELECT, INSERT, UPDATE (ciphertext, updated_at) ON gitlab_tokens TO resolveflow_app;
