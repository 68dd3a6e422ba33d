-- name: insert_link
INSERT INTO sign_in_links (tenant_id, principal_id, token_hash, issued_by, expires_at)
VALUES (%(tenant_id)s, %(principal_id)s, %(token_hash)s, %(issued_by)s,
        clock_timestamp() + make_interval(secs => %(ttl_seconds)s))
RETURNING id, expires_at

-- name: use_link
-- The one statement that makes a link single-use: of two requests racing with the same link, the
-- second finds used_at set once the first commits, and updates nothing.
UPDATE sign_in_links SET used_at = clock_timestamp()
WHERE tenant_id = %(tenant_id)s AND token_hash = %(token_hash)s
  AND used_at IS NULL AND expires_at > clock_timestamp()
RETURNING id, principal_id

-- name: link_by_hash
SELECT l.id, l.principal_id, p.subject, l.expires_at, l.used_at,
       l.expires_at <= clock_timestamp() AS expired
FROM sign_in_links l JOIN principals p ON p.id = l.principal_id
WHERE l.tenant_id = %(tenant_id)s AND l.token_hash = %(token_hash)s

-- name: tenant_name
SELECT name FROM tenants WHERE id = %(tenant_id)s

-- name: insert_event
-- The audit trail's own insert (store/sql/audit.sql), for the sign-in link's events, which are
-- accounts' words (accounts/sign_in_links.py: LinkEvent) rather than members of AuditEvent.
INSERT INTO audit_events (tenant_id, actor, event, subject_type, subject_id, details, trace_id)
VALUES (%(tenant_id)s, %(actor)s, %(event)s, 'sign_in_link', %(subject_id)s, %(details)s,
        %(trace_id)s)
