-- name: suggested_execution
-- The newest execution in the tenant that sent a part on this issue as a GitHub suggestion: a
-- github.issue setting the label (names compared case-insensitively, as GitHub compares them),
-- or a close as a duplicate; with the label as the proposal spelled it ('' for a close). One
-- whose request may have left (sending, unknown) counts: the suggestion may be in GitHub.
SELECT e.id AS execution_id, e.proposal_id,
       coalesce((SELECT l FROM jsonb_array_elements_text(p.action -> 'labels') l
                 WHERE lower(l) = lower(%(label)s::text) LIMIT 1), '') AS label
FROM executions e
JOIN proposals p ON p.id = e.proposal_id AND p.tenant_id = e.tenant_id
WHERE e.tenant_id = %(tenant_id)s
  AND e.state IN ('sending', 'sent', 'unknown')
  AND p.action ->> 'kind' = %(action_kind)s
  AND p.action ->> 'suggest' = 'true'
  AND lower(p.action -> 'target' ->> 'repository') = %(repository)s::text
  AND (p.action -> 'target' ->> 'issue')::bigint = %(issue)s
  AND (%(label)s::text = '' OR EXISTS (
        SELECT 1 FROM jsonb_array_elements_text(p.action -> 'labels') l
        WHERE lower(l) = lower(%(label)s::text)))
ORDER BY e.created_at DESC
LIMIT 1

-- name: record_decision
-- Once per suggested part of an execution: a redelivery (or a read after the webhook) inserts
-- nothing and returns no row.
INSERT INTO suggestion_decisions (
    tenant_id, execution_id, proposal_id, repository, issue, part, label, outcome, decided_at,
    decided_by, decided_by_id, seen_by
) VALUES (
    %(tenant_id)s, %(execution_id)s, %(proposal_id)s, %(repository)s, %(issue)s, %(part)s,
    %(label)s, %(outcome)s, %(decided_at)s, %(decided_by)s, %(decided_by_id)s, %(seen_by)s
)
ON CONFLICT ON CONSTRAINT suggestion_decisions_once DO NOTHING
RETURNING id

-- name: suggested_on_issue
-- The executions sent since a time that put parts on this issue as GitHub suggestions, and how
-- many of their parts have a recorded decision.
SELECT e.id AS execution_id, e.proposal_id, p.action, e.created_at AS sent_at,
       (SELECT count(*) FROM suggestion_decisions d
        WHERE d.tenant_id = e.tenant_id AND d.execution_id = e.id) AS decided
FROM executions e
JOIN proposals p ON p.id = e.proposal_id AND p.tenant_id = e.tenant_id
WHERE e.tenant_id = %(tenant_id)s
  AND e.state IN ('sending', 'sent', 'unknown')
  AND e.created_at >= %(since)s
  AND p.action ->> 'kind' IN ('github.issue', 'github.issue_close_duplicate')
  AND p.action ->> 'suggest' = 'true'
  AND lower(p.action -> 'target' ->> 'repository') = %(repository)s::text
  AND (p.action -> 'target' ->> 'issue')::bigint = %(issue)s
ORDER BY e.created_at DESC

-- name: suggested_parts
-- Every approved proposal decided since a time (in one place, when asked) that went out as
-- GitHub suggestions, once per recorded GitHub decision on it (or once with no decision).
SELECT p.id AS proposal_id, p.lineage_id,
       lower(p.action -> 'target' ->> 'repository') AS place,
       p.action ->> 'kind' AS action_kind,
       d.label, d.outcome, d.decided_at,
       coalesce(d.decided_by, 'GitHub user ' || d.decided_by_id::text) AS decided_by
FROM approvals a
JOIN proposals p ON p.id = a.proposal_id AND p.tenant_id = a.tenant_id
LEFT JOIN suggestion_decisions d ON d.tenant_id = p.tenant_id AND d.proposal_id = p.id
WHERE a.tenant_id = %(tenant_id)s
  AND a.decision = 'approved'
  AND a.decided_at >= %(since)s
  AND p.action ->> 'suggest' = 'true'
  AND p.action ->> 'kind' IN ('github.issue', 'github.issue_close_duplicate')
  AND (%(place)s::text IS NULL OR lower(p.action -> 'target' ->> 'repository') = %(place)s)

-- name: decisions_on_issue
-- What is recorded for an issue, newest first (tests and the CLI read it).
SELECT execution_id, proposal_id, part, label, outcome, decided_at, decided_by, decided_by_id,
       seen_by
FROM suggestion_decisions
WHERE tenant_id = %(tenant_id)s AND repository = %(repository)s::text AND issue = %(issue)s
ORDER BY decided_at DESC, recorded_at DESC
