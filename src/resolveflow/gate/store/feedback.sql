-- name: decided_proposals
-- The latest decision of each proposal lineage decided since a time, newest first: the decided
-- version, the lineage's first version (what was suggested, by whom, with which note) and, when
-- a triage run made it, the run's branch and rule. Older decisions of a lineage (a version
-- rejected, then edited and approved) are left out: the last one is the team's answer.
-- ``score``: what the suggestion was made with, when it had one: a triage investigation's best
-- related document's relevance (what the duplicate floor gates on).
SELECT decided.*
FROM (
    SELECT DISTINCT ON (d.lineage_id)
           d.id AS proposal_id, d.lineage_id, d.version, d.action AS decided_action,
           f.action AS first_action, f.author_kind, f.note,
           c.branch, c.rule,
           a.decision, a.reason, a.decided_at,
           i.best_relevance AS score
    FROM approvals a
    JOIN proposals d ON d.id = a.proposal_id AND d.tenant_id = a.tenant_id
    JOIN proposals f ON f.lineage_id = d.lineage_id AND f.version = 1 AND f.tenant_id = d.tenant_id
    LEFT JOIN run_classifications c ON c.run_id = f.run_id AND c.tenant_id = f.tenant_id
    LEFT JOIN LATERAL (
        SELECT best_relevance FROM investigations
        WHERE run_id = f.run_id AND tenant_id = f.tenant_id
        ORDER BY created_at DESC LIMIT 1
    ) i ON true
    WHERE a.tenant_id = %(tenant_id)s AND a.decided_at >= %(since)s
      -- One place only, when asked (a proposal's "suggestions like this"): spelled as each
      -- action kind's ``repository`` spells it (gate/domain/actions).
      AND (%(place)s::text IS NULL OR coalesce(
            f.action -> 'target' ->> 'repository',
            'gitlab:' || (f.action -> 'target' ->> 'project'),
            'email:' || (f.action ->> 'mailbox')
          ) = %(place)s)
    ORDER BY d.lineage_id, a.decided_at DESC
) decided
ORDER BY decided.decided_at DESC
LIMIT %(limit)s

-- name: lineage_first
-- What a lineage suggested: its first version, the triage run's branch and rule if any, and
-- its score (as in decided_proposals) and the floor it was made at.
SELECT f.action AS first_action, f.author_kind, f.note, c.branch, c.rule,
       i.best_relevance AS score,
       i.relevance_floor AS floor
FROM proposals f
LEFT JOIN run_classifications c ON c.run_id = f.run_id AND c.tenant_id = f.tenant_id
LEFT JOIN LATERAL (
    SELECT best_relevance, relevance_floor FROM investigations
    WHERE run_id = f.run_id AND tenant_id = f.tenant_id
    ORDER BY created_at DESC LIMIT 1
) i ON true
WHERE f.tenant_id = %(tenant_id)s AND f.lineage_id = %(lineage_id)s AND f.version = 1
