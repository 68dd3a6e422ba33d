-- Email drafts (issue 15): what happened between a request and an approved message. One draft per
-- request answered; every version of it is a row, never changed afterwards: who or what wrote it
-- (the deterministic drafter, a model with its prompt version, or a reviewer's edit and the version
-- they saw), the examples it came from, the checks' findings, and the proposal a passing version
-- became. The approval, the digest, the send and the server's reply are the proposal's and its
-- execution's records.
CREATE TABLE mail_drafts (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    mailbox text NOT NULL CHECK (mailbox = lower(mailbox) AND mailbox ~ '^[^@\s]+@[^@\s]+$'),
    -- The request as parsed (MailMessage fields, text included): untrusted data, shown, never obeyed.
    request jsonb NOT NULL CHECK (jsonb_typeof(request) = 'object'),
    request_message_id text NOT NULL CHECK (length(request_message_id) BETWEEN 3 AND 998),
    facts text NOT NULL DEFAULT '' CHECK (length(facts) <= 20000),
    -- The proposal lineage the passing versions became (NULL until one passed).
    lineage_id uuid,
    created_by uuid REFERENCES principals (id),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT mail_drafts_tenant_key UNIQUE (id, tenant_id)
);
CREATE INDEX mail_drafts_tenant_created ON mail_drafts (tenant_id, created_at DESC);
-- A proposal lineage is one draft's: approval looks the draft up by it.
CREATE UNIQUE INDEX mail_drafts_lineage ON mail_drafts (tenant_id, lineage_id)
    WHERE lineage_id IS NOT NULL;

CREATE TABLE mail_draft_versions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL,
    draft_id uuid NOT NULL,
    version integer NOT NULL CHECK (version >= 1),
    author_kind text NOT NULL CHECK (author_kind IN ('deterministic', 'model', 'reviewer')),
    -- A reviewer's edit: the version they were shown and edited.
    based_on integer CHECK (based_on IS NULL OR (based_on >= 1 AND based_on < version)),
    provider text CHECK (provider IS NULL OR length(provider) BETWEEN 1 AND 100),
    model text CHECK (model IS NULL OR length(model) BETWEEN 1 AND 200),
    prompt_version text CHECK (prompt_version IS NULL OR length(prompt_version) BETWEEN 1 AND 100),
    subject text NOT NULL CHECK (length(subject) BETWEEN 1 AND 998),
    to_addresses text[] NOT NULL,
    cc_addresses text[] NOT NULL DEFAULT '{}',
    bcc_addresses text[] NOT NULL DEFAULT '{}',
    body text NOT NULL CHECK (length(body) BETWEEN 1 AND 1000000),
    in_reply_to text,
    reference_ids text[] NOT NULL DEFAULT '{}',
    -- [{reply_message_id, subject, score}, ...]: the examples shown to whoever wrote this version.
    examples jsonb NOT NULL CHECK (jsonb_typeof(examples) = 'array'),
    missing_information text[] NOT NULL DEFAULT '{}',
    -- [{check, message}, ...]; empty: every check passed.
    findings jsonb NOT NULL CHECK (jsonb_typeof(findings) = 'array'),
    -- The proposal this version became (only a version whose checks passed becomes one).
    proposal_id uuid REFERENCES proposals (id),
    created_by uuid REFERENCES principals (id),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    FOREIGN KEY (draft_id, tenant_id) REFERENCES mail_drafts (id, tenant_id) ON DELETE CASCADE,
    CONSTRAINT mail_draft_versions_unique UNIQUE (draft_id, version),
    CHECK (proposal_id IS NULL OR findings = '[]'::jsonb),
    CHECK ((author_kind = 'reviewer') = (based_on IS NOT NULL)),
    CHECK ((author_kind = 'model') = (model IS NOT NULL))
);

SELECT rf_isolate_tenant_tables(ARRAY['mail_drafts', 'mail_draft_versions']);
GRANT SELECT, INSERT ON mail_drafts, mail_draft_versions TO resolveflow_app;
GRANT UPDATE (lineage_id) ON mail_drafts TO resolveflow_app;
