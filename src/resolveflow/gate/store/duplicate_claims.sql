-- name: holder
-- The close-as-duplicate that holds an issue (migration 0036): the lineage, its latest version
-- and the original it names. At most one row: the database keeps one live claim per issue.
SELECT c.lineage_id, c.proposal_id, (p.action->>'original')::bigint AS original
FROM close_duplicate_claims c
JOIN proposals p ON p.tenant_id = c.tenant_id AND p.id = c.proposal_id
WHERE c.tenant_id = %(tenant_id)s AND c.repository = lower(%(repository)s)
  AND c.issue = %(issue)s AND c.released_at IS NULL

-- name: take
-- The lineage of ``proposal_id`` claims its issue again, if its claim was let go or it never had
-- one (a lineage older than the claims). A claim it holds is left as it is. Another lineage's
-- live claim on the issue makes this fail on close_duplicate_claims_one_in_flight.
INSERT INTO close_duplicate_claims (lineage_id, tenant_id, proposal_id, repository, issue)
SELECT p.lineage_id, p.tenant_id, p.id, lower(p.action->'target'->>'repository'),
       (p.action->'target'->>'issue')::bigint
FROM proposals p
WHERE p.tenant_id = %(tenant_id)s AND p.id = %(proposal_id)s
ON CONFLICT (lineage_id) DO UPDATE
    SET proposal_id = EXCLUDED.proposal_id, released_at = NULL, claimed_at = clock_timestamp()
    WHERE close_duplicate_claims.released_at IS NOT NULL
