-- One-time sign-in links (issue 29): an operator's `resolveflow sign-in-link` signs a principal in
-- to the web pages without a GitHub OAuth app. The link's token is rfl_<tenant hex>_<secret>, so it
-- is looked up inside its tenant's row-level-security scope; only its SHA-256 is stored. A link
-- lives at most an hour and is used once: the runtime role may only set used_at, and only once.
CREATE TABLE sign_in_links (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    principal_id uuid NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    token_hash text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),
    issued_by text NOT NULL CHECK (length(issued_by) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz,
    CONSTRAINT sign_in_links_token_unique UNIQUE (token_hash),
    CHECK (expires_at > created_at AND expires_at <= created_at + interval '1 hour'),
    CHECK (used_at IS NULL OR used_at >= created_at)
);

-- Once used, a link never changes again (not even back to unused).
CREATE FUNCTION rf_guard_sign_in_link() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.used_at IS NOT NULL THEN
        RAISE EXCEPTION 'sign-in link % was used already', OLD.id USING ERRCODE = 'RFX01';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER sign_in_links_once BEFORE UPDATE ON sign_in_links
    FOR EACH ROW EXECUTE FUNCTION rf_guard_sign_in_link();

SELECT rf_isolate_tenant_tables(ARRAY['sign_in_links']);
GRANT SELECT, INSERT, UPDATE (used_at) ON sign_in_links TO resolveflow_app;
