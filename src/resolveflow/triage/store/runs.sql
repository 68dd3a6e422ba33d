-- name: insert_run
INSERT INTO runs (id, tenant_id, workflow, repository, issue_number, requested_by, status)
VALUES (%(id)s, %(tenant_id)s, %(workflow)s, %(repository)s, %(issue_number)s,
        %(requested_by)s, 'running')

-- name: run_by_id
SELECT r.id, r.tenant_id, r.workflow, r.repository, r.issue_number, r.requested_by, r.status,
       r.detail, r.created_at, r.updated_at,
       c.classification, c.rule, c.reason, c.branch, c.route_reason
FROM runs r LEFT JOIN run_classifications c ON c.run_id = r.id
WHERE r.tenant_id = %(tenant_id)s AND r.id = %(id)s

-- name: list_runs
SELECT r.id, r.tenant_id, r.workflow, r.repository, r.issue_number, r.requested_by, r.status,
       r.detail, r.created_at, r.updated_at,
       c.classification, c.rule, c.reason, c.branch, c.route_reason
FROM runs r LEFT JOIN run_classifications c ON c.run_id = r.id
WHERE r.tenant_id = %(tenant_id)s AND (%(status)s::text IS NULL OR r.status = %(status)s)
ORDER BY r.created_at DESC
LIMIT %(limit)s

-- name: set_status
UPDATE runs SET status = %(status)s, detail = detail || %(detail)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s
RETURNING *

-- name: insert_snapshot
-- A step replayed after a crash keeps the evidence its first pass recorded.
INSERT INTO evidence_snapshots (run_id, tenant_id, raw, facts)
VALUES (%(run_id)s, %(tenant_id)s, %(raw)s, %(facts)s)
ON CONFLICT (run_id) DO NOTHING

-- name: snapshot_for_run
SELECT raw, facts, created_at FROM evidence_snapshots
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s

-- name: insert_classification
INSERT INTO run_classifications (run_id, tenant_id, classification, rule, reason, branch,
                                 route_reason)
VALUES (%(run_id)s, %(tenant_id)s, %(classification)s, %(rule)s, %(reason)s, %(branch)s,
        %(route_reason)s)
ON CONFLICT (run_id) DO NOTHING

-- name: acquire_lease
-- Taken only if free or expired: a second resumer gets no row and changes nothing.
INSERT INTO run_leases (run_id, tenant_id, owner, expires_at)
VALUES (%(run_id)s, %(tenant_id)s, %(owner)s,
        clock_timestamp() + make_interval(secs => %(seconds)s))
ON CONFLICT (run_id) DO UPDATE
    SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
    WHERE run_leases.expires_at < clock_timestamp()
RETURNING owner

-- name: release_lease
DELETE FROM run_leases WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND owner = %(owner)s

-- name: grant_checkpoint_tables
GRANT SELECT, INSERT, UPDATE, DELETE
    ON checkpoints, checkpoint_blobs, checkpoint_writes, checkpoint_migrations
    TO resolveflow_app

-- name: checkpoint_tables_granted
SELECT has_table_privilege('resolveflow_app', 'checkpoint_writes', 'DELETE') AS granted

-- name: stalled_runs
-- Runs still waiting although their latest proposal was decided (an approval from the web is
-- recorded first and the run resumed by a job; this finds runs whose job never ran).
SELECT r.id, a.principal_id AS resume_as
FROM runs r
JOIN LATERAL (
    SELECT p.id FROM proposals p
    WHERE p.tenant_id = r.tenant_id AND p.run_id = r.id
    ORDER BY p.version DESC, p.created_at DESC LIMIT 1
) latest ON true
JOIN approvals a ON a.proposal_id = latest.id AND a.tenant_id = r.tenant_id
WHERE r.tenant_id = %(tenant_id)s AND r.status = 'awaiting_approval'
  AND a.decided_at < clock_timestamp() - make_interval(secs => %(min_age_seconds)s)
ORDER BY a.decided_at
LIMIT %(limit)s

-- name: interrupted_runs
-- Runs whose process died mid-graph (a worker killed, a connection cut): still 'running' (or
-- 'executing': killed between that status and the execution's outcome) with no live lease and
-- untouched for a while. Maintenance drives each on from its last checkpoint: every step is
-- re-checked or idempotent, and the gate sends once.
SELECT r.id, r.requested_by AS resume_as
FROM runs r
LEFT JOIN run_leases l ON l.run_id = r.id
WHERE r.tenant_id = %(tenant_id)s
  AND r.workflow = 'triage'
  AND r.status IN ('running', 'executing')
  AND (l.run_id IS NULL OR l.expires_at < clock_timestamp())
  AND r.updated_at < clock_timestamp() - make_interval(secs => %(min_age_seconds)s)
ORDER BY r.updated_at
LIMIT %(limit)s
