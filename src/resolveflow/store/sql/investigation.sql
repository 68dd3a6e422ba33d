-- name: reserve_model_call
-- One more call for this principal today, unless that would pass the limit (then no row).
INSERT INTO model_call_budget AS b (tenant_id, principal_id, day, calls)
SELECT %(tenant_id)s, %(principal_id)s, (now() AT TIME ZONE 'UTC')::date, 1
WHERE %(limit)s >= 1
ON CONFLICT (tenant_id, principal_id, day) DO UPDATE SET calls = b.calls + 1
    WHERE b.calls < %(limit)s
RETURNING calls

-- name: insert_model_call
INSERT INTO model_calls (
    tenant_id, run_id, principal_id, purpose, provider, model, served_model, prompt_tokens,
    completion_tokens, latency_ms, attempts, outcome, error
) VALUES (
    %(tenant_id)s, %(run_id)s, %(principal_id)s, %(purpose)s, %(provider)s, %(model)s,
    %(served_model)s, %(prompt_tokens)s, %(completion_tokens)s, %(latency_ms)s, %(attempts)s,
    %(outcome)s, %(error)s
)

-- name: model_calls_for_run
SELECT id, purpose, provider, model, served_model, prompt_tokens, completion_tokens, latency_ms,
       attempts, outcome, error, created_at
FROM model_calls
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY created_at, id

-- name: insert_investigation
INSERT INTO investigations (
    tenant_id, run_id, provider, model, relevance_floor, snippets, best_relevance, diagnosis,
    critique, gates, outcome, reason
) VALUES (
    %(tenant_id)s, %(run_id)s, %(provider)s, %(model)s, %(relevance_floor)s, %(snippets)s,
    %(best_relevance)s, %(diagnosis)s, %(critique)s, %(gates)s, %(outcome)s, %(reason)s
)
RETURNING id

-- name: investigations_for_run
SELECT id, provider, model, relevance_floor, snippets, diagnosis, critique, gates, outcome, reason,
       created_at
FROM investigations
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY created_at, id
