-- name: insert_proposal
INSERT INTO proposals (id, tenant_id, lineage_id, version, run_id, action, digest, author_kind,
                       created_by, note)
VALUES (%(id)s, %(tenant_id)s, %(lineage_id)s, %(version)s, %(run_id)s, %(action)s, %(digest)s,
        %(author_kind)s, %(created_by)s, %(note)s)
RETURNING *

-- name: proposal_by_id
SELECT * FROM proposals WHERE tenant_id = %(tenant_id)s AND id = %(id)s

-- name: latest_version
SELECT max(version) AS version FROM proposals
WHERE tenant_id = %(tenant_id)s AND lineage_id = %(lineage_id)s

-- name: lineage_versions
SELECT p.id, p.version, p.action, p.digest, a.decision
FROM proposals p LEFT JOIN approvals a ON a.proposal_id = p.id
WHERE p.tenant_id = %(tenant_id)s AND p.lineage_id = %(lineage_id)s
ORDER BY p.version

-- name: list_proposals
SELECT p.*, a.decision, e.id AS execution_id, e.state AS execution_state
FROM proposals p
LEFT JOIN approvals a ON a.proposal_id = p.id
LEFT JOIN executions e ON e.proposal_id = p.id
WHERE p.tenant_id = %(tenant_id)s
ORDER BY p.created_at DESC
LIMIT %(limit)s

-- name: insert_approval
INSERT INTO approvals (tenant_id, proposal_id, digest, decision, principal_id, reason, expires_at)
VALUES (%(tenant_id)s, %(proposal_id)s, %(digest)s, %(decision)s, %(principal_id)s, %(reason)s,
        %(expires_at)s)
RETURNING *

-- name: approval_for_proposal
SELECT * FROM approvals WHERE tenant_id = %(tenant_id)s AND proposal_id = %(proposal_id)s

-- name: approval_by_id
SELECT * FROM approvals WHERE tenant_id = %(tenant_id)s AND id = %(id)s

-- name: lock_lineage
SELECT pg_advisory_xact_lock(hashtextextended(%(lineage_id)s::text, 0))

-- name: now
SELECT now() AS now

-- name: latest_for_run
-- The newest version of the run's proposal (edits make new versions in the same lineage).
SELECT p.* FROM proposals p
WHERE p.tenant_id = %(tenant_id)s AND p.run_id = %(run_id)s
ORDER BY p.version DESC, p.created_at DESC
LIMIT 1
