-- Each tenant's own notification webhook (docs/notifications.md, "A webhook per tenant"): a
-- deployment that serves several teams tells each one in its own chat, and a tenant's proposals
-- never reach another tenant's hook. The URL (a Slack URL is itself a credential) and the HMAC
-- key are stored encrypted with the tokens' cipher, bound to the tenant (a ciphertext copied to
-- another tenant's row does not decrypt). A tenant without a row is told through the process's
-- RESOLVEFLOW_NOTIFY_URL, if any. The json format is always signed: the database refuses it
-- without a key.
CREATE TABLE tenant_notify_webhooks (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    format text NOT NULL CHECK (format IN ('slack', 'json')),
    url_ciphertext text NOT NULL,
    secret_ciphertext text,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT tenant_notify_webhooks_json_signed CHECK (format = 'slack' OR secret_ciphertext IS NOT NULL)
);

SELECT rf_isolate_tenant_tables(ARRAY['tenant_notify_webhooks']);
GRANT SELECT, INSERT, DELETE, UPDATE (format, url_ciphertext, secret_ciphertext, updated_at)
    ON tenant_notify_webhooks TO resolveflow_app;
