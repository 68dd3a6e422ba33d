-- Investigation: every model call (provider, model, tokens, latency, outcome), the investigation
-- record of a run (retrieved snippets with scores, the diagnosis, the gates, the outcome), and the
-- per-principal daily count of model calls the budget is checked against.

CREATE TABLE model_calls (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    run_id uuid REFERENCES runs (id) ON DELETE CASCADE,
    principal_id uuid REFERENCES principals (id),
    purpose text NOT NULL CHECK (purpose IN ('diagnosis', 'critique')),
    provider text NOT NULL CHECK (provider ~ '^[a-z0-9_-]{1,40}$'),
    model text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
    served_model text,
    prompt_tokens integer CHECK (prompt_tokens >= 0),
    completion_tokens integer CHECK (completion_tokens >= 0),
    latency_ms double precision NOT NULL CHECK (latency_ms >= 0),
    attempts integer NOT NULL CHECK (attempts >= 0),
    outcome text NOT NULL CHECK (outcome IN (
        'ok', 'refused', 'invalid_output', 'timeout', 'unavailable', 'error', 'budget_spent'
    )),
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- A failed call says why; a successful one has nothing to say.
    CONSTRAINT model_calls_error_iff_failed CHECK ((outcome = 'ok') = (error IS NULL))
);

CREATE INDEX model_calls_by_run ON model_calls (tenant_id, run_id, created_at);

CREATE TABLE investigations (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    run_id uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    provider text NOT NULL CHECK (provider ~ '^[a-z0-9_-]{1,40}$'),
    model text,
    relevance_floor double precision NOT NULL CHECK (relevance_floor BETWEEN 0 AND 1),
    snippets jsonb NOT NULL CHECK (jsonb_typeof(snippets) = 'array'),
    diagnosis jsonb,
    critique text,
    gates jsonb NOT NULL CHECK (jsonb_typeof(gates) = 'array' AND jsonb_array_length(gates) > 0),
    outcome text NOT NULL CHECK (outcome IN ('approve', 'escalate')),
    reason text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- No model, no model answer: the none provider cannot carry a diagnosis or a critique.
    CONSTRAINT investigations_none_has_no_model_output CHECK (
        provider <> 'none' OR (model IS NULL AND diagnosis IS NULL AND critique IS NULL)
    ),
    -- An approval needs every gate passed: a row claiming otherwise cannot be written.
    CONSTRAINT investigations_approve_needs_every_gate CHECK (
        outcome <> 'approve' OR NOT jsonb_path_exists(gates, '$[*] ? (@.passed == false)')
    )
);

CREATE INDEX investigations_by_run ON investigations (tenant_id, run_id, created_at);

-- Model calls per principal per UTC day. Incremented by one conditional UPSERT that refuses to
-- pass the limit, so concurrent runs cannot overspend.
CREATE TABLE model_call_budget (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    principal_id uuid NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    day date NOT NULL,
    calls integer NOT NULL CHECK (calls >= 0),
    PRIMARY KEY (tenant_id, principal_id, day)
);

SELECT rf_isolate_tenant_tables(ARRAY['model_calls', 'investigations', 'model_call_budget']);

-- Calls and investigations are facts: written once, never changed.
GRANT SELECT, INSERT ON model_calls, investigations TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (calls) ON model_call_budget TO resolveflow_app;
