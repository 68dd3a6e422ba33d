-- One store for every principal's own GitHub token (issue 11, finding 8). Until now a token given
-- with `principals add --github-token-stdin` sat in clear text in principals.github_token, and a
-- sign-in token was encrypted (Fernet) in user_github_tokens, bound to nobody.
--
-- Now github_tokens holds one row per principal, the token encrypted by the application with
-- AES-256-GCM and the tenant and principal ids as associated data (store/token_cipher.py). SQL
-- cannot encrypt (the key never reaches the database), so the tokens to convert wait in
-- github_tokens_to_seal, which the runtime role cannot read at all, with their github_tokens row's
-- ciphertext NULL. Every start-up with RESOLVEFLOW_TOKEN_ENCRYPTION_KEY set seals them and empties
-- that table (store/tenants.py: seal_waiting_tokens); until then the executor refuses to write for
-- those approvers rather than post under the service account.
--
-- Which token wins when a principal had both: the sign-in one (docs/web.md); the clear-text CLI
-- token is then dropped here.

ALTER TABLE user_github_tokens RENAME TO github_tokens;
ALTER INDEX user_github_tokens_pkey RENAME TO github_tokens_pkey;
ALTER TABLE github_tokens DROP CONSTRAINT user_github_tokens_ciphertext_check;
ALTER TABLE github_tokens ALTER COLUMN ciphertext DROP NOT NULL;
-- NULL for a token given by an operator: nobody has read its login from GitHub.
ALTER TABLE github_tokens ALTER COLUMN github_login DROP NOT NULL;

CREATE TABLE github_tokens_to_seal (
    principal_id uuid PRIMARY KEY REFERENCES github_tokens (principal_id) ON DELETE CASCADE,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    secret text NOT NULL,
    legacy_fernet boolean NOT NULL  -- true: a Fernet ciphertext; false: the token in clear
);
-- No grant to resolveflow_app: only the owner (the start-up sealing step) reads it, tenant by
-- tenant like everything else (row-level security is forced below).
REVOKE ALL ON github_tokens_to_seal FROM PUBLIC;

-- A non-superuser owner is subject to forced row-level security and sees no tenant here; this
-- transaction moves every tenant's rows, then forces it again.
ALTER TABLE principals NO FORCE ROW LEVEL SECURITY;
ALTER TABLE github_tokens NO FORCE ROW LEVEL SECURITY;

INSERT INTO github_tokens_to_seal (principal_id, tenant_id, secret, legacy_fernet)
SELECT principal_id, tenant_id, ciphertext, true FROM github_tokens;
UPDATE github_tokens SET ciphertext = NULL;

WITH operator_given AS (
    INSERT INTO github_tokens (principal_id, tenant_id, github_login, ciphertext)
    SELECT id, tenant_id, NULL, NULL FROM principals
    WHERE github_token IS NOT NULL AND github_token <> ''
    ON CONFLICT (principal_id) DO NOTHING
    RETURNING principal_id
)
INSERT INTO github_tokens_to_seal (principal_id, tenant_id, secret, legacy_fernet)
SELECT p.id, p.tenant_id, p.github_token, false
FROM principals p JOIN operator_given o ON o.principal_id = p.id;

ALTER TABLE principals DROP COLUMN github_token;
ALTER TABLE principals FORCE ROW LEVEL SECURITY;
ALTER TABLE github_tokens FORCE ROW LEVEL SECURITY;
SELECT rf_isolate_tenant_tables(ARRAY['github_tokens_to_seal']);

ALTER TABLE github_tokens ADD CONSTRAINT github_tokens_ciphertext_shape
    CHECK (ciphertext ~ '^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+$');
