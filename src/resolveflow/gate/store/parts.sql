-- name: insert_part
INSERT INTO triage_parts (run_id, name, tenant_id, proposal_id, position, kind, score, floor,
                          kept, left_out, public, paragraph, items)
VALUES (%(run_id)s, %(name)s, %(tenant_id)s, %(proposal_id)s, %(position)s, %(kind)s,
        %(score)s, %(floor)s, %(left_out)s::text IS NULL, %(left_out)s, %(public)s, %(paragraph)s,
        %(items)s)
ON CONFLICT (run_id, name) DO NOTHING

-- name: parts_of_run
-- A run's parts in the order the run made them.
SELECT name, kind, score, floor, left_out, public, paragraph, items
FROM triage_parts
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY position

-- name: parts_of_lineages
-- The parts of the runs that proposed these lineages (their first versions' ids).
SELECT proposal_id AS lineage_id, name, kind, score, floor, left_out, public, paragraph, items
FROM triage_parts
WHERE tenant_id = %(tenant_id)s AND proposal_id = ANY(%(lineage_ids)s)
ORDER BY proposal_id, position

-- name: parts_of_runs
-- The parts of several runs (an inbox page's), each run's in the order it made them.
SELECT run_id, name, kind, score, floor, left_out, public, paragraph, items
FROM triage_parts
WHERE tenant_id = %(tenant_id)s AND run_id = ANY(%(run_ids)s)
ORDER BY run_id, position
