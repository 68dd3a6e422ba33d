-- Metrics (issue 17): the counts /metrics reports, across every tenant, in one round trip (a row per tenant and label: the caller adds them up).
-- Row-level security is forced on the tenant tables (the owner too), so the function visits
-- each tenant with the tenant setting set, transaction-local, as the runtime role's own
-- transactions do; it returns counts only, never a row's contents, and runs with the caller's
-- rights (no SECURITY DEFINER). Labels are bounded words: a status, a state, a provider
-- (configuration: ^[a-z0-9_-]{1,40}$), an outcome, a bucket bound.
CREATE FUNCTION rf_metric_counts() RETURNS TABLE (metric text, label text, value double precision)
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    t record;
    bounds double precision[] := ARRAY[60, 300, 900, 3600, 14400, 86400, 604800];
    b double precision;
BEGIN
    FOR t IN SELECT id FROM tenants LOOP
        PERFORM set_config('resolveflow.tenant_id', t.id::text, true);
        RETURN QUERY
            SELECT 'runs', r.status, count(*)::double precision FROM runs r GROUP BY r.status;
        RETURN QUERY
            SELECT 'executions', e.state, count(*)::double precision FROM executions e GROUP BY e.state;
        RETURN QUERY
            SELECT 'model_calls', m.provider || '/' || m.outcome, count(*)::double precision
            FROM model_calls m GROUP BY m.provider, m.outcome;
        RETURN QUERY
            SELECT 'model_tokens', m.provider || '/prompt', coalesce(sum(m.prompt_tokens), 0)::double precision
            FROM model_calls m GROUP BY m.provider
            UNION ALL
            SELECT 'model_tokens', m.provider || '/completion', coalesce(sum(m.completion_tokens), 0)::double precision
            FROM model_calls m GROUP BY m.provider;
        -- From a proposal version to its approval: cumulative buckets, then sum and count.
        FOREACH b IN ARRAY bounds LOOP
            RETURN QUERY
                SELECT 'approval_wait_bucket', b::text, count(*)::double precision
                FROM approvals a JOIN proposals p ON p.id = a.proposal_id
                WHERE a.decision = 'approved'
                  AND extract(epoch FROM a.decided_at - p.created_at) <= b;
        END LOOP;
        RETURN QUERY
            SELECT 'approval_wait_sum', '', coalesce(sum(extract(epoch FROM a.decided_at - p.created_at)), 0)::double precision
            FROM approvals a JOIN proposals p ON p.id = a.proposal_id
            WHERE a.decision = 'approved'
            UNION ALL
            SELECT 'approval_wait_count', '', count(*)::double precision
            FROM approvals a JOIN proposals p ON p.id = a.proposal_id
            WHERE a.decision = 'approved';
    END LOOP;
    PERFORM set_config('resolveflow.tenant_id', '', true);
END
$$;

GRANT EXECUTE ON FUNCTION rf_metric_counts() TO resolveflow_app;
