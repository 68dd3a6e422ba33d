-- name: save_webhook
-- One webhook per tenant: the latest given replaces the last.
INSERT INTO tenant_notify_webhooks (tenant_id, format, url_ciphertext, secret_ciphertext)
VALUES (%(tenant_id)s, %(format)s, %(url_ciphertext)s, %(secret_ciphertext)s)
ON CONFLICT (tenant_id) DO UPDATE
    SET format = EXCLUDED.format, url_ciphertext = EXCLUDED.url_ciphertext,
        secret_ciphertext = EXCLUDED.secret_ciphertext, updated_at = clock_timestamp()

-- name: webhook
SELECT format, url_ciphertext, secret_ciphertext, updated_at FROM tenant_notify_webhooks
WHERE tenant_id = %(tenant_id)s

-- name: remove_webhook
DELETE FROM tenant_notify_webhooks WHERE tenant_id = %(tenant_id)s
