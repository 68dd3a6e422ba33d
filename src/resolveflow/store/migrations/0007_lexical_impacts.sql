-- The full-text branch scores from the inverted index alone. Ranking candidates with ts_rank
-- fetched every candidate chunk's row (text, 1.5 kB vector and tsvector: about one page each),
-- which at 100k chunks was 2,500-14,000 page reads per query and most of a search's time. Each
-- (chunk, lexeme) posting now carries its BM25 term weight, and a query scores a chunk as the
-- sum over its terms of idf × impact, read by an index-only scan. Unlike ts_rank, rare terms
-- count for more (idf comes from term_stats, per tenant).

ALTER TABLE chunk_terms ADD COLUMN impact real NOT NULL DEFAULT 0;

-- BM25's term part, k1 = 1.2 and b = 0.75: an occurrence in the title (weight A) counts twice,
-- and the chunk's length is its number of distinct lexemes against a fixed typical 80 (a
-- per-tenant average would change every posting as the index grows).
CREATE FUNCTION rf_term_impacts(p_tsv tsvector) RETURNS TABLE (lexeme text, impact real)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT t.lexeme,
           (f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * length(p_tsv) / 80.0)))::real
    FROM unnest(p_tsv) AS t
    CROSS JOIN LATERAL (
        SELECT coalesce(sum(CASE WHEN w = 'A' THEN 2.0 ELSE 1.0 END), 1.0) AS tf
        FROM unnest(t.weights) AS w
    ) AS f
$$;

UPDATE chunk_terms ct SET impact = i.impact
FROM chunks c, rf_term_impacts(c.tsv) AS i
WHERE ct.tenant_id = c.tenant_id AND ct.chunk_id = c.id AND ct.lexeme = i.lexeme;

-- The impact rides in the primary key's index, so scoring never visits the table's rows.
ALTER TABLE chunk_terms
    DROP CONSTRAINT chunk_terms_pkey,
    ADD CONSTRAINT chunk_terms_pkey PRIMARY KEY (tenant_id, lexeme, chunk_id) INCLUDE (impact);

CREATE OR REPLACE FUNCTION rf_count_terms() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO chunk_terms (tenant_id, lexeme, chunk_id, impact)
        SELECT n.tenant_id, i.lexeme, n.id, i.impact FROM new_chunks n, rf_term_impacts(n.tsv) AS i;
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

DROP FUNCTION rf_terms_tsquery(text[]);
