-- name: inbox
-- Runs waiting for a decision, newest first, with the latest proposal's digest and target. A run
-- whose proposal went to the digest (digest_entries) is not listed while it waits.
SELECT r.id AS run_id, r.repository, r.issue_number, r.status, r.created_at,
       c.classification, c.rule, c.branch,
       latest.id AS proposal_id, latest.digest, latest.version, latest.action,
       s.raw -> 'issue' ->> 'title' AS issue_title
FROM runs r
LEFT JOIN run_classifications c ON c.run_id = r.id
LEFT JOIN evidence_snapshots s ON s.run_id = r.id AND s.tenant_id = r.tenant_id
LEFT JOIN LATERAL (
    SELECT p.id, p.lineage_id, p.digest, p.version, p.action FROM proposals p
    WHERE p.tenant_id = r.tenant_id AND p.run_id = r.id
    ORDER BY p.version DESC, p.created_at DESC LIMIT 1
) latest ON true
WHERE r.tenant_id = %(tenant_id)s
  AND (%(status)s::text IS NULL OR r.status = %(status)s)
  AND (%(repository)s::text IS NULL OR r.repository = %(repository)s)
  AND (%(classification)s::text IS NULL OR c.classification = %(classification)s)
  AND NOT (r.status = 'awaiting_approval' AND EXISTS (
      SELECT 1 FROM digest_entries d
      WHERE d.tenant_id = r.tenant_id AND d.lineage_id = latest.lineage_id
  ))
ORDER BY r.created_at DESC
LIMIT %(limit)s

-- name: run_repositories
SELECT DISTINCT repository FROM runs
WHERE tenant_id = %(tenant_id)s AND repository IS NOT NULL
ORDER BY repository

-- name: recent_audit_events
-- With the mailbox of the email an event is about (its proposal's, or its execution's
-- proposal's; NULL for anything else), so that the mail grant can hold on the details.
SELECT e.id, e.at, e.actor, e.event, e.subject_type, e.subject_id, e.run_id, e.details,
       mail.mailbox
FROM (
    SELECT * FROM audit_events
    WHERE tenant_id = %(tenant_id)s
    ORDER BY id DESC
    LIMIT %(limit)s
) e
LEFT JOIN LATERAL (
    SELECT p.action ->> 'mailbox' AS mailbox
    FROM proposals p
    WHERE p.tenant_id = e.tenant_id AND p.action ->> 'kind' = 'email.send'
      AND p.id = (
          CASE e.subject_type
              WHEN 'proposal' THEN e.subject_id::uuid
              WHEN 'execution' THEN (
                  SELECT x.proposal_id FROM executions x
                  WHERE x.tenant_id = e.tenant_id AND x.id = e.subject_id::uuid
              )
          END
      )
) mail ON true
ORDER BY e.id DESC

-- name: pending_proposals
-- Proposals made without a run whose latest version nobody has decided yet, newest first; those
-- sent to the digest instead (digest_entries) are not.
SELECT p.id AS proposal_id, p.version, p.digest, p.action, p.created_at,
       p.action->'target'->>'repository' AS repository
FROM proposals p
WHERE p.tenant_id = %(tenant_id)s
  AND p.run_id IS NULL
  AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.proposal_id = p.id)
  AND NOT EXISTS (
      SELECT 1 FROM proposals newer
      WHERE newer.lineage_id = p.lineage_id AND newer.version > p.version
  )
  AND NOT EXISTS (
      SELECT 1 FROM digest_entries d WHERE d.tenant_id = p.tenant_id AND d.lineage_id = p.lineage_id
  )
  AND (%(repository)s::text IS NULL OR p.action->'target'->>'repository' = %(repository)s)
ORDER BY p.created_at DESC
LIMIT %(limit)s

-- name: proposal_repositories
SELECT DISTINCT action->'target'->>'repository' AS repository FROM proposals
WHERE tenant_id = %(tenant_id)s AND run_id IS NULL
ORDER BY repository
