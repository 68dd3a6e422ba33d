-- name: grant_mailbox
INSERT INTO mailbox_grants (tenant_id, principal_id, mailbox)
VALUES (%(tenant_id)s, %(principal_id)s, %(mailbox)s)
ON CONFLICT DO NOTHING

-- name: revoke_mailbox
DELETE FROM mailbox_grants
WHERE tenant_id = %(tenant_id)s AND principal_id = %(principal_id)s AND mailbox = %(mailbox)s

-- name: granted_mailboxes
SELECT mailbox FROM mailbox_grants
WHERE tenant_id = %(tenant_id)s AND principal_id = %(principal_id)s

-- name: save_mailbox_credential
-- One secret per mailbox: the latest given replaces the last.
INSERT INTO mailbox_credentials (tenant_id, mailbox, kind, ciphertext)
VALUES (%(tenant_id)s, %(mailbox)s, %(kind)s, %(ciphertext)s)
ON CONFLICT (tenant_id, mailbox) DO UPDATE
    SET kind = EXCLUDED.kind, ciphertext = EXCLUDED.ciphertext, updated_at = clock_timestamp()

-- name: mailbox_credential
SELECT kind, ciphertext FROM mailbox_credentials
WHERE tenant_id = %(tenant_id)s AND mailbox = %(mailbox)s

-- name: save_attachment
INSERT INTO email_attachments (tenant_id, sha256, media_type, bytes)
VALUES (%(tenant_id)s, %(sha256)s, %(media_type)s, %(bytes)s)
ON CONFLICT (tenant_id, sha256) DO NOTHING

-- name: attachments_by_sha256
SELECT sha256, bytes FROM email_attachments
WHERE tenant_id = %(tenant_id)s AND sha256 = ANY(%(sha256s)s)

-- name: approver_holds_grant
-- The executor's re-check: whoever approved still holds the grant for the mailbox.
SELECT EXISTS (
    SELECT 1 FROM approvals a
    JOIN mailbox_grants g ON g.tenant_id = a.tenant_id AND g.principal_id = a.principal_id
    WHERE a.tenant_id = %(tenant_id)s AND a.id = %(approval_id)s AND g.mailbox = %(mailbox)s
) AS held
