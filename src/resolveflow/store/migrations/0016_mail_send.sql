-- Sending email (issue 15): who may approve (and draft from) which mailbox, each mailbox's secret
-- encrypted by the application (AES-256-GCM, store/token_cipher.py; the tenant, the mailbox and
-- the kind are the associated data, so a ciphertext copied to another row does not decrypt; the
-- key never reaches the database), the bytes of approved attachments by SHA-256, and the step
-- 'send' of an email.send execution.
ALTER TABLE principals ADD CONSTRAINT principals_tenant_key UNIQUE (id, tenant_id);

CREATE TABLE mailbox_grants (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    principal_id uuid NOT NULL,
    mailbox text NOT NULL CHECK (mailbox = lower(mailbox) AND mailbox ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'),
    granted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, principal_id, mailbox),
    -- The principal is one of the tenant's: a grant never crosses tenants.
    FOREIGN KEY (principal_id, tenant_id) REFERENCES principals (id, tenant_id) ON DELETE CASCADE
);

CREATE TABLE mailbox_credentials (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    mailbox text NOT NULL CHECK (mailbox = lower(mailbox) AND mailbox ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'),
    kind text NOT NULL CHECK (kind IN ('password', 'xoauth2')),
    ciphertext text NOT NULL CHECK (ciphertext ~ '^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+$'),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, mailbox)
);

CREATE TABLE email_attachments (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    media_type text NOT NULL CHECK (length(media_type) BETWEEN 3 AND 255),
    bytes bytea NOT NULL CHECK (octet_length(bytes) <= 26214400),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, sha256)
);

SELECT rf_isolate_tenant_tables(ARRAY['mailbox_grants', 'mailbox_credentials', 'email_attachments']);
GRANT SELECT, INSERT, DELETE ON mailbox_grants TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (kind, ciphertext, updated_at) ON mailbox_credentials TO resolveflow_app;
-- Stored by digest, never changed: the same bytes hash to the same key.
GRANT SELECT, INSERT ON email_attachments TO resolveflow_app;

ALTER TABLE execution_attempts DROP CONSTRAINT execution_attempts_step_check;
ALTER TABLE execution_attempts ADD CONSTRAINT execution_attempts_step_check
    CHECK (step IN ('comment', 'labels', 'create', 'send'));
