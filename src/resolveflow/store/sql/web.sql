-- name: insert_delivery
-- Nothing comes back for a delivery id already seen: the redelivery starts nothing.
INSERT INTO webhook_deliveries (delivery_id, event, action, repository, issue_number, queued)
VALUES (%(delivery_id)s, %(event)s, %(action)s, %(repository)s, %(issue_number)s, %(queued)s)
ON CONFLICT (delivery_id) DO NOTHING
RETURNING delivery_id

-- name: delivery_by_id
SELECT delivery_id, event, action, repository, issue_number, queued, received_at
FROM webhook_deliveries WHERE delivery_id = %(delivery_id)s

-- name: count_deliveries
SELECT count(*) AS n FROM webhook_deliveries

-- name: claim_webhook_run
INSERT INTO webhook_run_claims (delivery_id, tenant_id)
VALUES (%(delivery_id)s, %(tenant_id)s)
ON CONFLICT DO NOTHING
RETURNING delivery_id

-- name: insert_session
INSERT INTO web_sessions (tenant_id, principal_id, token_hash, csrf_token, expires_at)
VALUES (%(tenant_id)s, %(principal_id)s, %(token_hash)s, %(csrf_token)s,
        clock_timestamp() + make_interval(secs => %(ttl_seconds)s))
RETURNING id, expires_at

-- name: live_session
SELECT s.id, s.principal_id, s.csrf_token, s.expires_at
FROM web_sessions s
WHERE s.tenant_id = %(tenant_id)s AND s.token_hash = %(token_hash)s
  AND s.ended_at IS NULL AND s.expires_at > clock_timestamp()

-- name: end_session
UPDATE web_sessions SET ended_at = clock_timestamp()
WHERE tenant_id = %(tenant_id)s AND token_hash = %(token_hash)s AND ended_at IS NULL
RETURNING id

-- name: upsert_user_token
INSERT INTO user_github_tokens (principal_id, tenant_id, github_login, ciphertext)
VALUES (%(principal_id)s, %(tenant_id)s, %(github_login)s, %(ciphertext)s)
ON CONFLICT (principal_id) DO UPDATE
    SET github_login = EXCLUDED.github_login, ciphertext = EXCLUDED.ciphertext,
        updated_at = clock_timestamp()

-- name: user_token
SELECT github_login, ciphertext, updated_at FROM user_github_tokens
WHERE tenant_id = %(tenant_id)s AND principal_id = %(principal_id)s

-- name: consume_usage
-- One statement: increments only while under the limit, so concurrent requests cannot overshoot.
INSERT INTO usage_counters AS u (tenant_id, principal_id, day, kind, used)
SELECT %(tenant_id)s, %(principal_id)s, (clock_timestamp() AT TIME ZONE 'UTC')::date, %(kind)s, 1
WHERE %(limit)s > 0
ON CONFLICT (principal_id, day, kind) DO UPDATE SET used = u.used + 1
    WHERE u.used < %(limit)s
RETURNING used

-- name: usage_today
SELECT kind, used FROM usage_counters
WHERE tenant_id = %(tenant_id)s AND principal_id = %(principal_id)s
  AND day = (clock_timestamp() AT TIME ZONE 'UTC')::date

-- name: recent_audit_events
SELECT id, at, actor, event, subject_type, subject_id, run_id, details
FROM audit_events
WHERE tenant_id = %(tenant_id)s
ORDER BY id DESC
LIMIT %(limit)s

-- name: stalled_runs
-- Runs still waiting although their latest proposal was decided (an approval from the web is
-- recorded first and the run resumed by a job; this finds runs whose job never ran).
SELECT r.id, r.requested_by, a.principal_id AS decided_by
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

-- name: inbox
-- Runs waiting for a decision, newest first, with the latest proposal's digest and target.
SELECT r.id AS run_id, r.repository, r.issue_number, r.status, r.created_at,
       c.classification, c.rule, c.branch,
       latest.id AS proposal_id, latest.digest, latest.version, latest.action
FROM runs r
LEFT JOIN run_classifications c ON c.run_id = r.id
LEFT JOIN LATERAL (
    SELECT p.id, p.digest, p.version, p.action FROM proposals p
    WHERE p.tenant_id = r.tenant_id AND p.run_id = r.id
    ORDER BY p.version DESC, p.created_at DESC LIMIT 1
) latest ON true
WHERE r.tenant_id = %(tenant_id)s
  AND (%(status)s::text IS NULL OR r.status = %(status)s)
  AND (%(repository)s::text IS NULL OR r.repository = %(repository)s)
  AND (%(classification)s::text IS NULL OR c.classification = %(classification)s)
ORDER BY r.created_at DESC
LIMIT %(limit)s

-- name: run_repositories
SELECT DISTINCT repository FROM runs
WHERE tenant_id = %(tenant_id)s AND repository IS NOT NULL
ORDER BY repository

-- name: grant_queue_tables
-- The runtime role may use procrastinate's tables, sequences and functions (and nothing else of
-- theirs); run by the owner after procrastinate's schema is applied.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.relname, c.relkind FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relname LIKE 'procrastinate%'
               AND c.relkind IN ('r', 'v', 'S') LOOP
        IF r.relkind IN ('r', 'v') THEN
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO resolveflow_app', r.relname);
        ELSE
            EXECUTE format('GRANT USAGE, SELECT, UPDATE ON SEQUENCE %I TO resolveflow_app', r.relname);
        END IF;
    END LOOP;
END
$$

-- name: queue_installed
SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS installed

-- name: queue_lock
SELECT pg_advisory_xact_lock(%(key)s)

-- name: jobs_by_task
SELECT id, task_name, status, args, attempts FROM procrastinate_jobs
WHERE task_name = %(task_name)s ORDER BY id

-- name: set_runtime_role
SET ROLE resolveflow_app
