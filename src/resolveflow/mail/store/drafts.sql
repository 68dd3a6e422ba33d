-- name: insert_draft
INSERT INTO mail_drafts (tenant_id, mailbox, request, request_message_id, facts, created_by)
VALUES (%(tenant_id)s, %(mailbox)s, %(request)s, %(request_message_id)s, %(facts)s, %(created_by)s)
RETURNING id, tenant_id, mailbox, request, request_message_id, facts, lineage_id, created_by,
          created_at

-- name: draft_by_id
SELECT id, tenant_id, mailbox, request, request_message_id, facts, lineage_id, created_by,
       created_at
FROM mail_drafts WHERE tenant_id = %(tenant_id)s AND id = %(draft_id)s

-- name: lock_draft
-- Versions are numbered under this lock: two edits at once get versions n+1 and n+2.
SELECT id FROM mail_drafts WHERE tenant_id = %(tenant_id)s AND id = %(draft_id)s FOR UPDATE

-- name: set_lineage
UPDATE mail_drafts SET lineage_id = %(lineage_id)s
WHERE tenant_id = %(tenant_id)s AND id = %(draft_id)s AND lineage_id IS NULL

-- name: insert_version
INSERT INTO mail_draft_versions (
    tenant_id, draft_id, version, author_kind, based_on, provider, model, prompt_version,
    subject, to_addresses, cc_addresses, bcc_addresses, body, in_reply_to, reference_ids,
    examples, missing_information, findings, facts, proposal_id, created_by
)
SELECT %(tenant_id)s, %(draft_id)s, coalesce(max(version), 0) + 1, %(author_kind)s, %(based_on)s,
       %(provider)s, %(model)s, %(prompt_version)s, %(subject)s, %(to_addresses)s,
       %(cc_addresses)s, %(bcc_addresses)s, %(body)s, %(in_reply_to)s, %(reference_ids)s,
       %(examples)s, %(missing_information)s, %(findings)s, %(facts)s, %(proposal_id)s,
       %(created_by)s
FROM mail_draft_versions WHERE tenant_id = %(tenant_id)s AND draft_id = %(draft_id)s
RETURNING *

-- name: versions
SELECT * FROM mail_draft_versions
WHERE tenant_id = %(tenant_id)s AND draft_id = %(draft_id)s ORDER BY version

-- name: recent_drafts
SELECT d.id, d.mailbox, d.request_message_id, d.request ->> 'subject' AS subject,
       d.request ->> 'from_address' AS requester, d.created_at, d.lineage_id,
       (SELECT max(v.version) FROM mail_draft_versions v
         WHERE v.tenant_id = d.tenant_id AND v.draft_id = d.id) AS versions
FROM mail_drafts d
WHERE d.tenant_id = %(tenant_id)s AND d.mailbox = ANY(%(mailboxes)s::text[])
ORDER BY d.created_at DESC LIMIT %(limit)s

-- name: draft_of_proposal
SELECT v.draft_id, v.version FROM mail_draft_versions v
WHERE v.tenant_id = %(tenant_id)s AND v.proposal_id = %(proposal_id)s

-- name: draft_of_lineage
SELECT d.id FROM mail_drafts d
WHERE d.tenant_id = %(tenant_id)s AND d.lineage_id = %(lineage_id)s
