-- name: runbooks
-- The tenant's trusted runbooks (indexed documents with a runbook tag), whole: refine attaches
-- one as it is stored. Oldest first, so a tag shared by two files picks the same one every time.
SELECT source, external_id, title, url, runbook_tag, runbook_triggers, body
FROM documents
WHERE tenant_id = %(tenant_id)s AND runbook_tag IS NOT NULL
ORDER BY runbook_tag, created_at NULLS LAST, external_id
