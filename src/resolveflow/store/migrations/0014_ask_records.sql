-- Ask (issue 13): every question asked and what was answered, for review and for measuring the
-- answers later. One row per ask, written by ask/answering.py (the CLI, the API and the page all go
-- through it). A record is never changed: the runtime role may insert and select only.
CREATE TABLE ask_records (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- Who asked; NULL when the asker is not a principal (the operator's CLI, an evaluation).
    principal_id uuid REFERENCES principals (id) ON DELETE CASCADE,
    question text NOT NULL CHECK (length(question) BETWEEN 1 AND 4000),
    -- The ranking: [{document_id, chunk_id, score, fused, cosine}, ...], best first.
    retrieved jsonb NOT NULL CHECK (jsonb_typeof(retrieved) = 'array'),
    -- What answerability was decided from, and the decision (NULL: nothing was retrieved).
    features jsonb CHECK (features IS NULL OR jsonb_typeof(features) = 'object'),
    answerable boolean,
    abstained boolean NOT NULL,
    answer_text text NOT NULL,
    -- [{n, chunk_id, document_id, title, path, url, section, quote}, ...]
    citations jsonb NOT NULL CHECK (jsonb_typeof(citations) = 'array'),
    provider text NOT NULL CHECK (length(provider) BETWEEN 1 AND 100),
    model text CHECK (model IS NULL OR length(model) BETWEEN 1 AND 200),
    generator text NOT NULL CHECK (length(generator) BETWEEN 1 AND 300),
    prompt_version text NOT NULL CHECK (length(prompt_version) BETWEEN 1 AND 100),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (NOT abstained OR citations = '[]'::jsonb)
);
CREATE INDEX ask_records_tenant_created ON ask_records (tenant_id, created_at DESC);

SELECT rf_isolate_tenant_tables(ARRAY['ask_records']);
GRANT SELECT, INSERT ON ask_records TO resolveflow_app;
