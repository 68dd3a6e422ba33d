-- Durations read both ways in the full-text branch (issue 13). Alerts say "within the next 24
-- hours" and runbooks "less than 24h": Prometheus writes durations as a number and a unit letter
-- (alert thresholds, PromQL ranges such as [5m]), and the English parser keeps "24h" as one word
-- that shares nothing with "24 hours". A number followed by a unit (ms, s, m, h, d, w, y, and the
-- abbreviations sec, min, hr) is now read as the number and the unit's word, in every chunk and
-- in every query, so "24h" still matches "24h" (both sides read "24 hours"). Replacing the token
-- rather than adding the words beside it keeps a title's share of words honest: a title saying
-- "4h" is fully covered by a question saying "4 hours". Measured on the dev sets (docs/ask.md,
-- "Durations").
CREATE FUNCTION rf_lexical_text(p_text text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT regexp_replace(regexp_replace(regexp_replace(regexp_replace(
           regexp_replace(regexp_replace(regexp_replace(p_text,
        '\m(\d+(?:\.\d+)?)(ms|msecs?)\M', '\1 milliseconds', 'g'),
        '\m(\d+(?:\.\d+)?)(s|secs?)\M', '\1 seconds', 'g'),
        '\m(\d+(?:\.\d+)?)(m|mins?)\M', '\1 minutes', 'g'),
        '\m(\d+(?:\.\d+)?)(h|hrs?)\M', '\1 hours', 'g'),
        '\m(\d+(?:\.\d+)?)(d)\M', '\1 days', 'g'),
        '\m(\d+(?:\.\d+)?)(w)\M', '\1 weeks', 'g'),
        '\m(\d+(?:\.\d+)?)(y)\M', '\1 years', 'g')
$$;

CREATE OR REPLACE FUNCTION rf_chunk_tsv(p_title text, p_text text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT setweight(to_tsvector('english', rf_lexical_text(coalesce(p_title, ''))), 'A')
        || setweight(to_tsvector('english', rf_lexical_text(p_text)), 'B')
$$;

CREATE OR REPLACE FUNCTION rf_query_terms(
    p_tenant uuid, p_text text, p_max_terms integer, p_max_chunks bigint
) RETURNS text[]
    LANGUAGE sql STABLE
    AS $$
    WITH terms AS (
        SELECT DISTINCT q.lexeme FROM unnest(to_tsvector('english', rf_lexical_text(p_text))) AS q
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

-- Chunks indexed before this migration and holding a duration are read again, so an index is
-- the same whether it was built before or after: their tsvector, their postings and the
-- tenant's term counts (mail chunks keep a tsvector but no postings or counts, 0017). Row-level
-- security binds the owner too (FORCE), so each tenant is done in its own scope.
DO $$
DECLARE
    caller_scope text := current_setting('resolveflow.tenant_id', true);
    scope uuid;
BEGIN
    FOR scope IN SELECT id FROM tenants LOOP
        PERFORM set_config('resolveflow.tenant_id', scope::text, true);
        CREATE TEMP TABLE rf_relexed ON COMMIT DROP AS
            SELECT c.id, c.mailbox, c.tsv AS old_tsv,
                   rf_chunk_tsv(CASE WHEN c.section = 'head' THEN d.title ELSE '' END, c.text)
                       AS new_tsv
            FROM chunks c
            JOIN documents d ON d.id = c.document_id AND d.tenant_id = c.tenant_id
            WHERE c.tenant_id = scope
              AND (rf_lexical_text(c.text) <> c.text
                   OR (c.section = 'head' AND rf_lexical_text(d.title) <> d.title));
        UPDATE chunks c SET tsv = r.new_tsv
        FROM rf_relexed r WHERE c.tenant_id = scope AND c.id = r.id;
        UPDATE term_stats s SET chunks = greatest(0, s.chunks - o.removed)
        FROM (
            SELECT t.lexeme, count(*)::integer AS removed
            FROM rf_relexed r, unnest(r.old_tsv) AS t
            WHERE r.mailbox IS NULL
            GROUP BY t.lexeme
        ) o
        WHERE s.tenant_id = scope AND s.lexeme = o.lexeme;
        DELETE FROM chunk_terms ct
        USING rf_relexed r WHERE ct.tenant_id = scope AND ct.chunk_id = r.id;
        INSERT INTO chunk_terms (tenant_id, lexeme, chunk_id, impact)
        SELECT scope, i.lexeme, r.id, i.impact
        FROM rf_relexed r, rf_term_impacts(r.new_tsv) AS i
        WHERE r.mailbox IS NULL;
        INSERT INTO term_stats AS s (tenant_id, lexeme, chunks)
        SELECT scope, t.lexeme, count(*)::integer
        FROM rf_relexed r, unnest(r.new_tsv) AS t
        WHERE r.mailbox IS NULL
        GROUP BY t.lexeme
        ORDER BY t.lexeme
        ON CONFLICT (tenant_id, lexeme) DO UPDATE SET chunks = s.chunks + EXCLUDED.chunks;
        DROP TABLE rf_relexed;
    END LOOP;
    PERFORM set_config('resolveflow.tenant_id', coalesce(caller_scope, ''), true);
END
$$;
