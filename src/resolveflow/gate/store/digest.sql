-- name: run_branch
-- The branch a triage run took (recorded before its proposal), which tells what it suggests.
SELECT branch FROM run_classifications
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s

-- name: insert_entry
INSERT INTO digest_entries (lineage_id, tenant_id, place, kind, why, approved, decisions)
VALUES (%(lineage_id)s, %(tenant_id)s, %(place)s, %(kind)s, %(why)s, %(approved)s, %(decisions)s)

-- name: entries
-- The digest of a span of days: each lineage sent to it, with its latest version, that version's
-- decision and its execution's state, oldest day first, then by place and kind.
SELECT e.lineage_id, e.place, e.kind, e.why, e.approved, e.decisions, e.created_at,
       latest.id AS proposal_id, latest.version, latest.action,
       a.decision, x.state AS execution_state
FROM digest_entries e
JOIN LATERAL (
    SELECT p.id, p.version, p.action FROM proposals p
    WHERE p.tenant_id = e.tenant_id AND p.lineage_id = e.lineage_id
    ORDER BY p.version DESC LIMIT 1
) latest ON true
LEFT JOIN approvals a ON a.tenant_id = e.tenant_id AND a.proposal_id = latest.id
LEFT JOIN executions x ON x.tenant_id = e.tenant_id AND x.proposal_id = latest.id
WHERE e.tenant_id = %(tenant_id)s
  AND e.created_at >= %(since)s AND e.created_at < %(until)s
ORDER BY e.created_at, e.place, e.kind
LIMIT %(limit)s

