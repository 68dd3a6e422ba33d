-- Retrieval: documents and their chunks (pgvector embeddings + full text), the embedding space
-- each tenant's index is in, "fixes #N" links, and resumable crawl cursors.

CREATE EXTENSION IF NOT EXISTS vector;

-- A space is (provider, model, dimensions). Vectors of different spaces are never compared.
-- Global, like tenants: it names models, not tenant data.
CREATE TABLE embedding_spaces (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider text NOT NULL CHECK (provider ~ '^[a-z0-9_-]{1,40}$'),
    model text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
    dimensions integer NOT NULL CHECK (dimensions BETWEEN 1 AND 2000),
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT embedding_spaces_unique UNIQUE (provider, model, dimensions),
    CONSTRAINT embedding_spaces_dims UNIQUE (id, dimensions)
);

-- One row per tenant that has indexed anything: the space its vectors are in and how many chunks
-- it holds (kept by triggers below; search uses it to choose exact or HNSW search).
CREATE TABLE retrieval_indexes (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    space_id integer NOT NULL REFERENCES embedding_spaces (id),
    chunk_count bigint NOT NULL DEFAULT 0 CHECK (chunk_count >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT retrieval_indexes_space UNIQUE (tenant_id, space_id)
);

CREATE TABLE documents (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    source text NOT NULL CHECK (length(source) BETWEEN 1 AND 200),
    external_id text NOT NULL CHECK (length(external_id) BETWEEN 1 AND 300),
    kind text NOT NULL CHECK (kind IN ('issue', 'pull', 'comment', 'runbook', 'doc')),
    title text NOT NULL DEFAULT '',
    url text,
    state text,
    labels text[] NOT NULL DEFAULT '{}',
    created_at timestamptz,
    closed_at timestamptz,
    source_updated_at timestamptz,
    runbook_tag text CHECK (runbook_tag IS NULL OR (kind = 'runbook' AND length(runbook_tag) > 0)),
    body text NOT NULL DEFAULT '',
    content_hash text NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
    chunk_count integer NOT NULL DEFAULT 0 CHECK (chunk_count >= 0),
    indexed_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT documents_source_unique UNIQUE (tenant_id, source, external_id),
    CONSTRAINT documents_tenant_key UNIQUE (id, tenant_id)
);

CREATE INDEX documents_by_created ON documents (tenant_id, created_at);

CREATE TABLE chunks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id uuid NOT NULL,
    document_id uuid NOT NULL,
    ordinal integer NOT NULL CHECK (ordinal >= 0),
    section text NOT NULL CHECK (section IN ('head', 'body', 'comment')),
    text text NOT NULL,
    -- The document's creation time, copied so the as-of filter needs no join.
    created_at timestamptz,
    space_id integer NOT NULL,
    dims integer NOT NULL,
    embedding vector NOT NULL,
    tsv tsvector NOT NULL,
    FOREIGN KEY (document_id, tenant_id) REFERENCES documents (id, tenant_id) ON DELETE CASCADE,
    -- A chunk's vector is in its tenant's current space; `index rebuild` defers this check while
    -- it moves every vector of the tenant to the new space in one transaction.
    CONSTRAINT chunks_in_index_space FOREIGN KEY (tenant_id, space_id)
        REFERENCES retrieval_indexes (tenant_id, space_id) ON DELETE CASCADE
        DEFERRABLE INITIALLY IMMEDIATE,
    CONSTRAINT chunks_space_dims FOREIGN KEY (space_id, dims)
        REFERENCES embedding_spaces (id, dimensions),
    CONSTRAINT chunks_vector_dims CHECK (vector_dims(embedding) = dims),
    CONSTRAINT chunks_position UNIQUE (document_id, ordinal)
);

-- Rows stay whole and uncompressed up to a full page: a 384-dimension vector is 1.5 kB, and with
-- the chunk's text and tsvector a row passes the default 2 kB TOAST threshold, which moved the
-- vector out of line and compressed the tsvector, so every distance or ts_rank paid a TOAST
-- fetch or a decompression (measured 2-6x slower). The vector is never toasted at all.
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE PLAIN;
ALTER TABLE chunks SET (toast_tuple_target = 8160);

CREATE INDEX chunks_by_tenant ON chunks (tenant_id, space_id, created_at);

-- HNSW needs a fixed dimension, so there is one partial expression index per dimension in use.
-- The function runs as the owner (index creation needs ownership); it only ever creates this one
-- kind of index, for an integer dimension the table's CHECK also allows.
CREATE FUNCTION rf_ensure_vector_index(p_dims integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
BEGIN
    IF p_dims IS NULL OR p_dims < 1 OR p_dims > 2000 THEN
        RAISE EXCEPTION 'vector dimension % is out of range', p_dims;
    END IF;
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON chunks USING hnsw ((embedding::vector(%s)) vector_cosine_ops) '
        'WITH (m = 16, ef_construction = 64) WHERE dims = %s',
        'chunks_hnsw_' || p_dims, p_dims, p_dims);
END
$$;

SELECT rf_ensure_vector_index(384);  -- all-MiniLM-L6-v2, the default embedder

-- Nearest chunks of one tenant in one space. Exact search scans only the tenant's rows (the
-- filter applies before ranking); HNSW uses the dimension's index with the tenant filter applied
-- to its candidates, so the caller raises hnsw.ef_search and falls back to exact search when too
-- few rows survive (pgvector 0.6 has no iterative index scans). STABLE: runs in the caller's
-- snapshot, so a search statement sees one consistent index.
CREATE FUNCTION rf_nearest_chunks(
    p_tenant uuid, p_space integer, p_query vector, p_limit integer, p_as_of timestamptz,
    p_exact boolean
) RETURNS TABLE (chunk_id bigint, distance double precision)
    LANGUAGE plpgsql STABLE ROWS 50  -- what callers ask for; the default guess of 1000 misplans joins
    AS $$
DECLARE
    d integer := vector_dims(p_query);
BEGIN
    IF p_exact THEN
        -- EXECUTE plans with the actual values each time; a cached generic plan of the same
        -- statement was measured 4x slower.
        RETURN QUERY EXECUTE
            'SELECT c.id, (c.embedding <=> $1)::double precision FROM chunks c '
            'WHERE c.tenant_id = $2 AND c.space_id = $3 '
            'AND ($4::timestamptz IS NULL OR c.created_at < $4) '
            'ORDER BY c.embedding <=> $1, c.id LIMIT $5'
            USING p_query, p_tenant, p_space, p_as_of, p_limit;
    ELSE
        -- The dimension is an integer typmod; it cannot be a bind parameter.
        RETURN QUERY EXECUTE format(
            'SELECT c.id, (c.embedding::vector(%1$s) <=> $1::vector(%1$s))::double precision '
            'FROM chunks c WHERE c.dims = %1$s AND c.tenant_id = $2 AND c.space_id = $3 '
            'AND ($4::timestamptz IS NULL OR c.created_at < $4) '
            'ORDER BY c.embedding::vector(%1$s) <=> $1::vector(%1$s) LIMIT $5', d)
            USING p_query, p_tenant, p_space, p_as_of, p_limit;
    END IF;
END
$$;

-- The full-text branch cannot use a GIN index on chunks.tsv: under row-level security a qual
-- whose operator is not leakproof (tsvector @@ tsquery is not) may not run before the policy, so
-- Postgres scans every row of the tenant (measured: 130-280 ms at 100k chunks). chunk_terms is
-- the same inverted index as a btree on (tenant, lexeme): equality is leakproof, so it is used
-- under RLS, and only the chunks holding a query term are ranked with ts_rank.
CREATE TABLE chunk_terms (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    lexeme text NOT NULL,
    chunk_id bigint NOT NULL,
    PRIMARY KEY (tenant_id, lexeme, chunk_id)
);

-- How many of a tenant's chunks hold each lexeme. Search uses it like BM25's IDF: the full-text
-- query is an OR of the query's rarest terms, and terms found in a large share of the tenant's
-- chunks are left out (they rank nothing and would make most rows candidates). Per tenant, so
-- other tenants' text never shapes a tenant's query.
CREATE TABLE term_stats (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    lexeme text NOT NULL,
    chunks integer NOT NULL CHECK (chunks >= 0),
    PRIMARY KEY (tenant_id, lexeme)
);

-- The query's terms for the full-text branch (English stemming, stop words dropped), an OR and
-- not an AND of every word: the p_max_terms rarest terms that occur in the tenant's index,
-- leaving out those in more than p_max_chunks chunks unless nothing else is left.
CREATE FUNCTION rf_query_terms(p_tenant uuid, p_text text, p_max_terms integer, p_max_chunks bigint)
    RETURNS text[]
    LANGUAGE sql STABLE
    AS $$
    WITH terms AS (
        SELECT DISTINCT q.lexeme FROM unnest(to_tsvector('english', p_text)) AS q
    ),
    known AS (
        SELECT t.lexeme, s.chunks
        FROM terms t
        JOIN term_stats s ON s.tenant_id = p_tenant AND s.lexeme = t.lexeme AND s.chunks > 0
    ),
    chosen AS (
        SELECT lexeme FROM known
        WHERE chunks <= p_max_chunks
           OR NOT EXISTS (SELECT 1 FROM known k WHERE k.chunks <= p_max_chunks)
        ORDER BY chunks, lexeme
        LIMIT p_max_terms
    )
    SELECT coalesce(array_agg(lexeme ORDER BY lexeme), '{}') FROM chosen
$$;

-- The OR of those lexemes as a tsquery. Lexemes are quoted for tsquery input (quotes and
-- backslashes doubled); the cast does not normalise them again.
CREATE FUNCTION rf_terms_tsquery(p_terms text[]) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(
        string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | '),
        '')::tsquery
    FROM unnest(p_terms) AS l
$$;

-- Each chunk's full-text vector: the title (weight A) only on the head chunk, the text as B.
CREATE FUNCTION rf_chunk_tsv(p_title text, p_text text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT setweight(to_tsvector('english', coalesce(p_title, '')), 'A')
        || setweight(to_tsvector('english', p_text), 'B')
$$;

-- Chunk counts per tenant, kept by statement-level triggers (one UPDATE per statement).
CREATE FUNCTION rf_count_chunks() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE retrieval_indexes r SET chunk_count = r.chunk_count + n.added, updated_at = now()
        FROM (SELECT tenant_id, count(*) AS added FROM new_chunks GROUP BY tenant_id) n
        WHERE r.tenant_id = n.tenant_id;
    ELSE
        UPDATE retrieval_indexes r
        SET chunk_count = greatest(0, r.chunk_count - n.removed), updated_at = now()
        FROM (SELECT tenant_id, count(*) AS removed FROM old_chunks GROUP BY tenant_id) n
        WHERE r.tenant_id = n.tenant_id;
    END IF;
    RETURN NULL;
END
$$;

-- The inverted index and lexeme counts per tenant. Fires after chunks_counted_* (triggers run in
-- name order), whose UPDATE of the tenant's retrieval_indexes row already serialises writers of
-- one tenant, so two transactions never take these rows' locks in different orders.
CREATE FUNCTION rf_count_terms() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO chunk_terms (tenant_id, lexeme, chunk_id)
        SELECT n.tenant_id, t.lexeme, n.id FROM new_chunks n, unnest(n.tsv) AS t;
        INSERT INTO term_stats AS s (tenant_id, lexeme, chunks)
        SELECT n.tenant_id, t.lexeme, count(*)::integer
        FROM new_chunks n, unnest(n.tsv) AS t
        GROUP BY n.tenant_id, t.lexeme
        ORDER BY n.tenant_id, t.lexeme
        ON CONFLICT (tenant_id, lexeme) DO UPDATE SET chunks = s.chunks + EXCLUDED.chunks;
    ELSE
        DELETE FROM chunk_terms c
        USING old_chunks n, unnest(n.tsv) AS t
        WHERE c.tenant_id = n.tenant_id AND c.lexeme = t.lexeme AND c.chunk_id = n.id;
        UPDATE term_stats s SET chunks = greatest(0, s.chunks - o.removed)
        FROM (
            SELECT n.tenant_id, t.lexeme, count(*)::integer AS removed
            FROM old_chunks n, unnest(n.tsv) AS t
            GROUP BY n.tenant_id, t.lexeme
        ) o
        WHERE s.tenant_id = o.tenant_id AND s.lexeme = o.lexeme;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_terms_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_chunks FOR EACH STATEMENT EXECUTE FUNCTION rf_count_terms();
CREATE TRIGGER chunks_terms_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_chunks FOR EACH STATEMENT EXECUTE FUNCTION rf_count_terms();

CREATE TRIGGER chunks_counted_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_chunks FOR EACH STATEMENT EXECUTE FUNCTION rf_count_chunks();
CREATE TRIGGER chunks_counted_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_chunks FOR EACH STATEMENT EXECUTE FUNCTION rf_count_chunks();

-- "fixes #N": a pull request (document_id) resolves the issue (target_source, target_external_id).
-- The target is named, not referenced, so the pull request may be indexed before its issue.
CREATE TABLE document_links (
    tenant_id uuid NOT NULL,
    document_id uuid NOT NULL,
    relation text NOT NULL CHECK (relation IN ('fixes')),
    target_source text NOT NULL,
    target_external_id text NOT NULL,
    FOREIGN KEY (document_id, tenant_id) REFERENCES documents (id, tenant_id) ON DELETE CASCADE,
    PRIMARY KEY (document_id, relation, target_source, target_external_id)
);

CREATE INDEX document_links_target ON document_links (tenant_id, target_source, target_external_id);

-- Where an interrupted crawl resumes: items with updated_at before `since` are all stored.
CREATE TABLE crawl_cursors (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    source text NOT NULL,
    since timestamptz,
    page integer NOT NULL DEFAULT 1 CHECK (page >= 1),
    items_seen bigint NOT NULL DEFAULT 0,
    finished_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, source)
);

SELECT rf_isolate_tenant_tables(ARRAY[
    'retrieval_indexes', 'documents', 'chunks', 'document_links', 'crawl_cursors',
    'term_stats', 'chunk_terms'
]);

GRANT SELECT, INSERT ON embedding_spaces TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (space_id, chunk_count, updated_at) ON retrieval_indexes
    TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON documents, document_links, crawl_cursors TO resolveflow_app;
GRANT SELECT, INSERT, UPDATE (chunks) ON term_stats TO resolveflow_app;
GRANT SELECT, INSERT, DELETE ON chunk_terms TO resolveflow_app;
GRANT SELECT, INSERT, DELETE, UPDATE (space_id, dims, embedding) ON chunks TO resolveflow_app;
REVOKE ALL ON FUNCTION rf_ensure_vector_index(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION rf_ensure_vector_index(integer) TO resolveflow_app;
