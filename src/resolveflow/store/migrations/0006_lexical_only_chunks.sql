-- A chunk may have no vector of its own: an issue's or pull request's later chunks are found by
-- their words, and by meaning through the document's head chunk (embedding them all made the
-- embedder three quarters of ingestion time; docs/retrieval.md has the measurements). Runbooks
-- and docs still get a vector per chunk. The HNSW index skips NULL vectors by itself; exact
-- search says so explicitly.
ALTER TABLE chunks ALTER COLUMN embedding DROP NOT NULL;

CREATE OR REPLACE FUNCTION rf_nearest_chunks(
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
            'WHERE c.tenant_id = $2 AND c.space_id = $3 AND c.embedding IS NOT NULL '
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
