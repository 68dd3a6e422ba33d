-- name: insert_execution
INSERT INTO executions (tenant_id, proposal_id, approval_id, digest, idempotency_key)
VALUES (%(tenant_id)s, %(proposal_id)s, %(approval_id)s, %(digest)s, %(idempotency_key)s)
RETURNING *

-- name: execution_by_id
SELECT * FROM executions WHERE tenant_id = %(tenant_id)s AND id = %(id)s

-- name: execution_for_proposal
SELECT * FROM executions WHERE tenant_id = %(tenant_id)s AND proposal_id = %(proposal_id)s

-- name: list_executions
SELECT e.*, p.action
FROM executions e JOIN proposals p ON p.id = e.proposal_id
WHERE e.tenant_id = %(tenant_id)s AND (%(state)s::text IS NULL OR e.state = %(state)s)
ORDER BY e.created_at DESC
LIMIT %(limit)s

-- name: claim_next_due
-- SKIP LOCKED lets many executors share the queue; the outer state test makes the claim conditional.
-- The same statement then takes the lineage lock, which serializes the claim with proposal edits:
-- an edit committed first is seen by the executor's next statement (a fresh snapshot), which
-- re-reads the proposal and refuses the older version; a claim committed first makes the edit see
-- a version being posted. Taking it here saves the executor a round trip per execution.
WITH claimed AS (
    UPDATE executions e
    SET state = 'sending', lease_owner = %(owner)s,
        lease_expires_at = clock_timestamp() + make_interval(secs => %(lease_seconds)s)
    WHERE e.id = (
        SELECT id FROM executions
        WHERE tenant_id = %(tenant_id)s AND state = 'pending' AND not_before <= clock_timestamp()
        ORDER BY not_before, created_at
        FOR UPDATE SKIP LOCKED
        LIMIT 1
    ) AND e.state = 'pending'
    RETURNING e.*
)
SELECT claimed.*
FROM claimed
CROSS JOIN LATERAL (
    SELECT pg_advisory_xact_lock(hashtextextended(p.lineage_id::text, 0))
    FROM proposals p WHERE p.tenant_id = claimed.tenant_id AND p.id = claimed.proposal_id
) AS lineage_lock

-- name: claim_by_id
-- As claim_next_due, for one execution.
WITH claimed AS (
    UPDATE executions
    SET state = 'sending', lease_owner = %(owner)s,
        lease_expires_at = clock_timestamp() + make_interval(secs => %(lease_seconds)s)
    WHERE tenant_id = %(tenant_id)s AND id = %(id)s
      AND state = 'pending' AND not_before <= clock_timestamp()
    RETURNING *
)
SELECT claimed.*
FROM claimed
CROSS JOIN LATERAL (
    SELECT pg_advisory_xact_lock(hashtextextended(p.lineage_id::text, 0))
    FROM proposals p WHERE p.tenant_id = claimed.tenant_id AND p.id = claimed.proposal_id
) AS lineage_lock

-- name: take_over_for_reconcile
-- A reconciler takes the lease of an execution whose owner vanished, or of an unknown one, but
-- never while one of its requests may still be on its way (an attempt's deadline is ahead).
UPDATE executions
SET lease_owner = %(owner)s,
    lease_expires_at = clock_timestamp() + make_interval(secs => %(lease_seconds)s)
WHERE tenant_id = %(tenant_id)s AND id = %(id)s
  AND (
    (state = 'sending' AND lease_expires_at < clock_timestamp())
    OR (state = 'unknown' AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp()))
  )
  AND NOT EXISTS (
    SELECT 1 FROM execution_attempts a
    LEFT JOIN attempt_outcomes o ON o.attempt_id = a.id
    WHERE a.tenant_id = %(tenant_id)s AND a.execution_id = %(id)s
      AND o.attempt_id IS NULL  -- an outcome means the request is over
      AND a.deadline_at > clock_timestamp()
  )
RETURNING *

-- name: reconcile_candidates
-- Unknown executions are re-checked at most every min_age seconds (each check reads every page
-- of an issue's comments from GitHub); abandoned claims are checked at once.
SELECT * FROM executions
WHERE tenant_id = %(tenant_id)s
  AND ((state = 'unknown'
        AND updated_at < clock_timestamp() - make_interval(secs => %(min_age_seconds)s))
       OR (state = 'sending' AND lease_expires_at < clock_timestamp()))
ORDER BY updated_at

-- name: finish
-- Only the current lease owner may record an outcome: a late owner changes nothing.
UPDATE executions
SET state = %(state)s, detail = %(detail)s, lease_expires_at = NULL,
    comment_id = coalesce(%(comment_id)s, comment_id),
    comment_url = coalesce(%(comment_url)s, comment_url),
    result_ref = coalesce(%(result_ref)s, result_ref),
    result_url = coalesce(%(result_url)s, result_url),
    labels_done = labels_done OR %(labels_done)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s
  AND state = ANY(%(from_states)s) AND lease_owner = %(owner)s
RETURNING *

-- name: record_comment
UPDATE executions
SET comment_id = %(comment_id)s, comment_url = %(comment_url)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND state = 'sending' AND lease_owner = %(owner)s
RETURNING *

-- name: release_for_retry
UPDATE executions
SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, detail = %(detail)s,
    comment_id = coalesce(%(comment_id)s, comment_id),
    comment_url = coalesce(%(comment_url)s, comment_url),
    not_before = clock_timestamp() + make_interval(secs => %(wait_seconds)s),
    rate_limit_waits = rate_limit_waits + %(count_wait)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s
  AND state = ANY(%(from_states)s) AND lease_owner = %(owner)s
RETURNING *

-- name: resolve_by_person
-- The resulting state is decided here, on the locked row: a comment that reconciliation confirmed
-- meanwhile turns "not sent" into partial (a created issue is one request: found means sent).
UPDATE executions
SET state = CASE WHEN %(was_sent)s THEN 'sent'
                 WHEN comment_id IS NOT NULL THEN 'partial'
                 ELSE 'not_sent' END,
    detail = %(detail)s, lease_owner = NULL, lease_expires_at = NULL
WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND state = 'unknown'
  AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp())
RETURNING *

-- name: insert_attempt
-- The attempt is recorded only while this owner holds a live lease, and the lease is renewed so it
-- outlasts the request's timeout: a reconciler can never take over while the request is in flight.
WITH held AS (
    UPDATE executions
    SET lease_expires_at = clock_timestamp() + make_interval(secs => %(lease_seconds)s)
    WHERE tenant_id = %(tenant_id)s AND id = %(execution_id)s AND state = 'sending'
      AND lease_owner = %(owner)s AND lease_expires_at > clock_timestamp()
    RETURNING id, tenant_id
)
INSERT INTO execution_attempts
    (tenant_id, execution_id, step, owner, credential, token_fingerprint, deadline_at)
SELECT tenant_id, id, %(step)s, %(owner)s, %(credential)s, %(token_fingerprint)s,
       clock_timestamp() + make_interval(secs => %(deadline_seconds)s)
FROM held
RETURNING id, started_at

-- name: insert_attempt_with_claim
-- In the claiming transaction the lease was set a moment ago by this same owner, so renewing it
-- would only write another row version; the owner and state are still checked.
INSERT INTO execution_attempts
    (tenant_id, execution_id, step, owner, credential, token_fingerprint, deadline_at)
SELECT tenant_id, id, %(step)s, %(owner)s, %(credential)s, %(token_fingerprint)s,
       clock_timestamp() + make_interval(secs => %(deadline_seconds)s)
FROM executions
WHERE tenant_id = %(tenant_id)s AND id = %(execution_id)s AND state = 'sending'
  AND lease_owner = %(owner)s
RETURNING id, started_at

-- name: insert_outcome
INSERT INTO attempt_outcomes (attempt_id, tenant_id, outcome, http_status, provider_ref, message)
VALUES (%(attempt_id)s, %(tenant_id)s, %(outcome)s, %(http_status)s, %(provider_ref)s, %(message)s)

-- name: attempts_for_execution
SELECT a.id, a.step, a.owner, a.credential, a.token_fingerprint, a.started_at, a.deadline_at,
       o.outcome, o.http_status, o.provider_ref, o.message, o.finished_at
FROM execution_attempts a LEFT JOIN attempt_outcomes o ON o.attempt_id = a.id
WHERE a.tenant_id = %(tenant_id)s AND a.execution_id = %(execution_id)s
ORDER BY a.started_at, a.id

-- name: execution_context
-- Everything the executor re-checks before writing, read in one round trip.
SELECT p.id AS p_id, p.tenant_id AS p_tenant_id, p.lineage_id, p.version, p.action,
       p.digest AS p_digest, p.created_by, p.author_kind, p.created_at AS p_created_at, p.run_id,
       a.id AS a_id, a.tenant_id AS a_tenant_id, a.proposal_id AS a_proposal_id,
       a.digest AS a_digest, a.decision, a.principal_id, a.reason, a.decided_at, a.expires_at,
       pr.id AS pr_id, pr.tenant_id AS pr_tenant_id, pr.subject, pr.roles,
       EXISTS (SELECT 1 FROM github_tokens t
                WHERE t.tenant_id = e.tenant_id AND t.principal_id = pr.id) AS has_github_token,
       (SELECT max(version) FROM proposals v
         WHERE v.tenant_id = e.tenant_id AND v.lineage_id = p.lineage_id) AS latest_version,
       ARRAY(SELECT full_name FROM repositories r WHERE r.tenant_id = e.tenant_id) AS allowed,
       now() AS db_now
FROM executions e
JOIN proposals p ON p.tenant_id = e.tenant_id AND p.id = e.proposal_id
LEFT JOIN approvals a ON a.tenant_id = e.tenant_id AND a.id = e.approval_id
LEFT JOIN principals pr ON pr.tenant_id = e.tenant_id AND pr.id = a.principal_id
WHERE e.tenant_id = %(tenant_id)s AND e.id = %(id)s

-- name: prior_uncertain
-- Earlier executions of the same digest or proposal lineage that ended unknown or not sent after a
-- request may have left: before writing again, the executor looks for their markers.
SELECT e.id, p.action,
       (SELECT min(a.started_at) FROM execution_attempts a
         WHERE a.tenant_id = e.tenant_id AND a.execution_id = e.id) AS first_started
FROM executions e
JOIN proposals p ON p.tenant_id = e.tenant_id AND p.id = e.proposal_id
WHERE e.tenant_id = %(tenant_id)s AND e.id <> %(id)s
  AND e.state IN ('unknown', 'not_sent')
  AND (e.digest = %(digest)s
       OR p.lineage_id = (SELECT lineage_id FROM proposals
                           WHERE tenant_id = %(tenant_id)s AND id = %(proposal_id)s))
  AND EXISTS (SELECT 1 FROM execution_attempts a
              WHERE a.tenant_id = e.tenant_id AND a.execution_id = e.id)
ORDER BY e.created_at

-- name: carried_out_version
-- The latest version of a lineage whose execution may have written something: sending, sent,
-- partial, unknown, or pending after an attempt (its comment may be out while its labels wait).
SELECT p.id, p.version, e.state
FROM executions e JOIN proposals p ON p.tenant_id = e.tenant_id AND p.id = e.proposal_id
WHERE p.tenant_id = %(tenant_id)s AND p.lineage_id = %(lineage_id)s
  AND (e.state IN ('sending', 'sent', 'partial', 'unknown')
       OR (e.state = 'pending' AND EXISTS (
             SELECT 1 FROM execution_attempts a
             WHERE a.tenant_id = e.tenant_id AND a.execution_id = e.id)))
ORDER BY p.version DESC
LIMIT 1

-- name: attempt_summary
-- Per step, in one read: whether a request may have reached the outside system (no outcome, or
-- one saying it (maybe) arrived; rate-limited, refused and unreachable ones wrote nothing), when
-- the first one started, and the credential the latest one was sent with.
SELECT a.step,
       bool_or(o.outcome IS NULL OR o.outcome IN ('sent', 'unknown')) AS may_have_left,
       min(a.started_at) AS first_started,
       (array_agg(a.credential ORDER BY a.started_at DESC, a.id DESC))[1] AS credential,
       (array_agg(a.token_fingerprint ORDER BY a.started_at DESC, a.id DESC))[1]
           AS token_fingerprint
FROM execution_attempts a LEFT JOIN attempt_outcomes o ON o.attempt_id = a.id
WHERE a.tenant_id = %(tenant_id)s AND a.execution_id = %(execution_id)s
GROUP BY a.step

-- name: due_approvers
-- Who approved each due execution, its action's kind, whether the approver has their own GitHub
-- token and whether the tenant has a GitLab token: `execute` checks before claiming anything that
-- each one has the credential its forge writes with.
SELECT e.id, pr.subject, p.action->>'kind' AS kind, tn.name AS tenant,
       EXISTS (SELECT 1 FROM github_tokens t
                WHERE t.tenant_id = e.tenant_id AND t.principal_id = pr.id) AS has_github_token,
       EXISTS (SELECT 1 FROM gitlab_tokens g
                WHERE g.tenant_id = e.tenant_id) AS has_gitlab_token
FROM executions e
JOIN proposals p ON p.tenant_id = e.tenant_id AND p.id = e.proposal_id
JOIN tenants tn ON tn.id = e.tenant_id
LEFT JOIN approvals a ON a.tenant_id = e.tenant_id AND a.id = e.approval_id
LEFT JOIN principals pr ON pr.tenant_id = e.tenant_id AND pr.id = a.principal_id
WHERE e.tenant_id = %(tenant_id)s AND e.state = 'pending' AND e.not_before <= clock_timestamp()
ORDER BY e.not_before, e.created_at

-- name: await_grace
-- github.issue_close_duplicate: the notice is out; back to the queue until the grace period has
-- passed (not_before), keeping the notice's facts. Not a rate-limit wait: nothing is counted.
UPDATE executions
SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, detail = %(detail)s,
    comment_id = %(comment_id)s, comment_url = %(comment_url)s,
    notice_at = %(notice_at)s, watch_digest = %(watch_digest)s, not_before = %(due)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND state = 'sending' AND lease_owner = %(owner)s
RETURNING *

-- name: live_close_duplicates
-- Our records of closing ``issue`` as a duplicate: the latest version of each lineage, not
-- rejected, whose execution has not ended without closing (none yet, pending, sending, unknown
-- or sent). ``state`` NULL: proposed or approved, not yet executed.
SELECT (p.action->>'original')::bigint AS original, e.state, p.id AS proposal_id
FROM proposals p
LEFT JOIN executions e ON e.tenant_id = p.tenant_id AND e.proposal_id = p.id
WHERE p.tenant_id = %(tenant_id)s
  AND p.action->>'kind' = 'github.issue_close_duplicate'
  AND lower(p.action->'target'->>'repository') = lower(%(repository)s)
  AND (p.action->'target'->>'issue')::bigint = %(issue)s
  AND p.version = (SELECT max(v.version) FROM proposals v
                    WHERE v.tenant_id = p.tenant_id AND v.lineage_id = p.lineage_id)
  AND NOT EXISTS (SELECT 1 FROM approvals a
                   WHERE a.tenant_id = p.tenant_id AND a.proposal_id = p.id
                     AND a.decision = 'rejected')
  AND (e.state IS NULL OR e.state IN ('pending', 'sending', 'unknown', 'sent'))
ORDER BY p.created_at
