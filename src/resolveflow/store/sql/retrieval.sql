-- name: insert_space
INSERT INTO embedding_spaces (provider, model, dimensions)
VALUES (%(provider)s, %(model)s, %(dimensions)s)
ON CONFLICT (provider, model, dimensions) DO NOTHING
RETURNING id

-- name: space_id
SELECT id FROM embedding_spaces
WHERE provider = %(provider)s AND model = %(model)s AND dimensions = %(dimensions)s

-- name: ensure_vector_index
SELECT rf_ensure_vector_index(%(dimensions)s)

-- name: index_state
SELECT r.space_id, r.chunk_count, s.provider, s.model, s.dimensions,
       (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector_version
FROM retrieval_indexes r
JOIN embedding_spaces s ON s.id = r.space_id
WHERE r.tenant_id = %(tenant_id)s

-- name: create_index_state
INSERT INTO retrieval_indexes (tenant_id, space_id) VALUES (%(tenant_id)s, %(space_id)s)
ON CONFLICT (tenant_id) DO NOTHING

-- name: lock_index_state
SELECT space_id FROM retrieval_indexes WHERE tenant_id = %(tenant_id)s FOR UPDATE

-- name: set_index_space
UPDATE retrieval_indexes SET space_id = %(space_id)s, updated_at = now()
WHERE tenant_id = %(tenant_id)s

-- name: defer_space_check
SET CONSTRAINTS chunks_in_index_space DEFERRED

-- name: set_ef_search
SELECT set_config('hnsw.ef_search', %(ef_search)s, true)

-- name: set_iterative_scan
-- pgvector 0.8+: a filtered HNSW scan continues until enough rows pass the tenant filter (up to
-- hnsw.max_scan_tuples), in exact distance order, instead of stopping at ef_search candidates.
SELECT set_config('hnsw.iterative_scan', 'strict_order', true)

-- name: document_hashes
SELECT external_id, content_hash FROM documents
WHERE tenant_id = %(tenant_id)s AND source = %(source)s AND external_id = ANY(%(external_ids)s)

-- name: document_versions
SELECT external_id, source_updated_at FROM documents
WHERE tenant_id = %(tenant_id)s AND source = %(source)s AND external_id = ANY(%(external_ids)s)

-- name: upsert_document
INSERT INTO documents (
    tenant_id, source, external_id, kind, title, url, state, labels, created_at, closed_at,
    source_updated_at, runbook_tag, runbook_triggers, body, content_hash, chunk_count, mailbox
) VALUES (
    %(tenant_id)s, %(source)s, %(external_id)s, %(kind)s, %(title)s, %(url)s, %(state)s,
    %(labels)s, %(created_at)s, %(closed_at)s, %(source_updated_at)s, %(runbook_tag)s,
    %(runbook_triggers)s, %(body)s, %(content_hash)s, %(chunk_count)s,
    -- An email document's mailbox is its source's ('mail:<mailbox>'; migration 0017).
    CASE WHEN %(kind)s = 'email' THEN substr(%(source)s, 6) END
)
ON CONFLICT (tenant_id, source, external_id) DO UPDATE SET
    kind = EXCLUDED.kind,
    title = EXCLUDED.title,
    url = EXCLUDED.url,
    state = EXCLUDED.state,
    labels = EXCLUDED.labels,
    created_at = EXCLUDED.created_at,
    closed_at = EXCLUDED.closed_at,
    source_updated_at = EXCLUDED.source_updated_at,
    runbook_tag = EXCLUDED.runbook_tag,
    runbook_triggers = EXCLUDED.runbook_triggers,
    body = EXCLUDED.body,
    content_hash = EXCLUDED.content_hash,
    chunk_count = EXCLUDED.chunk_count,
    indexed_at = now()
RETURNING id

-- name: delete_chunks
DELETE FROM chunks WHERE tenant_id = %(tenant_id)s AND document_id = %(document_id)s

-- name: insert_chunks
INSERT INTO chunks (
    tenant_id, document_id, ordinal, section, text, created_at, space_id, dims, embedding, tsv,
    mailbox
)
SELECT %(tenant_id)s, %(document_id)s, u.ordinal, u.section, u.text, %(created_at)s,
       %(space_id)s, %(dims)s, u.embedding::vector,
       rf_chunk_tsv(CASE WHEN u.section = 'head' THEN %(title)s ELSE '' END, u.text),
       -- The document's mailbox (NULL but for email): keeps mail out of the ordinary search.
       (SELECT d.mailbox FROM documents d
         WHERE d.id = %(document_id)s AND d.tenant_id = %(tenant_id)s)
FROM unnest(%(ordinals)s::integer[], %(sections)s::text[], %(texts)s::text[],
            %(embeddings)s::text[]) AS u (ordinal, section, text, embedding)

-- name: delete_links
DELETE FROM document_links WHERE tenant_id = %(tenant_id)s AND document_id = %(document_id)s

-- name: insert_links
INSERT INTO document_links (tenant_id, document_id, relation, target_source, target_external_id)
SELECT %(tenant_id)s, %(document_id)s, 'fixes', %(source)s, u.target
FROM unnest(%(targets)s::text[]) AS u (target)
ON CONFLICT DO NOTHING

-- name: lexical_query
-- The chosen terms and their BM25 idf in this tenant's index (total = its chunk count). Rarest
-- first, terms are kept while their postings add up to at most max_postings (the rarest always
-- stays): the branch's cost is its postings, and the terms left out are the query's most common,
-- whose idf adds least to any score.
WITH known AS (
    SELECT s.lexeme, s.chunks, sum(s.chunks) OVER (ORDER BY s.chunks, s.lexeme) AS running
    FROM unnest(
        rf_query_terms(%(tenant_id)s, %(query_text)s, %(max_terms)s, %(max_term_chunks)s)
    ) AS t (lexeme)
    JOIN term_stats s ON s.tenant_id = %(tenant_id)s AND s.lexeme = t.lexeme
),
kept AS (
    SELECT lexeme, chunks FROM known WHERE running <= %(max_postings)s OR running = chunks
)
SELECT coalesce(array_agg(lexeme ORDER BY lexeme), '{}') AS terms,
       coalesce(
           array_agg(ln(1 + (%(total)s - chunks + 0.5) / (chunks + 0.5))::real ORDER BY lexeme),
           '{}'
       ) AS idfs,
       -- Every tenant's chunks: the HNSW scan's ef_search depends on this tenant's share.
       (SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'chunks'::regclass)
           AS table_rows
FROM kept

-- name: hybrid_candidates
-- One statement, so both branches and the document rows come from one snapshot: a document
-- re-indexed meanwhile appears once, either before or after, never missing or twice. The query
-- vector and terms are bind parameters at every use (not a CTE), so the planner sees their
-- values.
WITH vec AS (
    SELECT n.chunk_id, n.distance,
           row_number() OVER (ORDER BY n.distance, n.chunk_id) AS vrank
    FROM rf_nearest_chunks(%(tenant_id)s, %(space_id)s, %(query_vector)s::vector,
                           %(vector_limit)s, %(as_of)s::timestamptz, %(exact)s) AS n
),
lex AS (
    -- Scored from the postings alone (idf × impact, an index-only scan under RLS); the as-of
    -- filter needs the chunks' times and is planned away when there is none.
    -- The idf is looked up by position (terms are few) rather than joined, which keeps the
    -- planner's row estimate from the postings' statistics (it then hashes, not sorts).
    SELECT t.chunk_id,
           sum(t.impact * (%(idfs)s::real[])[array_position(%(terms)s::text[], t.lexeme)])
               AS score
    FROM chunk_terms t
    WHERE t.tenant_id = %(tenant_id)s AND t.lexeme = ANY(%(terms)s::text[])
      AND (%(as_of)s::timestamptz IS NULL OR t.chunk_id IN (
            SELECT c.id FROM chunks c
            WHERE c.tenant_id = %(tenant_id)s AND c.created_at < %(as_of)s::timestamptz
          ))
    GROUP BY t.chunk_id
    ORDER BY score DESC, t.chunk_id
    LIMIT %(lexical_limit)s
),
lex_ranked AS (
    SELECT chunk_id, score, row_number() OVER (ORDER BY score DESC, chunk_id) AS lrank FROM lex
),
candidates AS (
    SELECT coalesce(v.chunk_id, l.chunk_id) AS chunk_id, v.distance, v.vrank, l.score, l.lrank
    FROM vec v FULL JOIN lex_ranked l ON l.chunk_id = v.chunk_id
),
-- The candidates' rows by primary key. Written as = ANY(ARRAY(...)) because under RLS the
-- planner hash-joined the candidates against a scan of every chunk (measured 100 ms at 100k).
picked AS (
    SELECT c.* FROM chunks c
    WHERE c.id = ANY (ARRAY(SELECT chunk_id FROM candidates)) AND c.tenant_id = %(tenant_id)s
      AND c.mailbox IS NULL  -- mail is the mail search's only (its chunks are not candidates)
)
SELECT c.id AS chunk_id, c.document_id, c.ordinal, c.section, c.text,
       -- A chunk without a vector of its own is placed by its document's head vector.
       coalesce(
           k.distance,
           c.embedding <=> %(query_vector)s::vector,
           (SELECT h.embedding <=> %(query_vector)s::vector FROM chunks h
             WHERE h.document_id = c.document_id AND h.tenant_id = c.tenant_id
               AND h.embedding IS NOT NULL
             ORDER BY h.ordinal LIMIT 1),
           1.0
       ) AS distance, k.vrank,
       coalesce(
           k.score,
           (SELECT sum(
                       t.impact * (%(idfs)s::real[])[array_position(%(terms)s::text[], t.lexeme)]
                   )
              FROM chunk_terms t
             WHERE t.tenant_id = c.tenant_id AND t.chunk_id = c.id
               AND t.lexeme = ANY(%(terms)s::text[])),
           0
       ) AS lexical_score,
       k.lrank,
       d.source, d.external_id, d.kind, d.title, d.url, d.state, d.labels, d.created_at,
       d.closed_at, d.runbook_tag,
       ARRAY(
           SELECT coalesce(p.url, p.source || ':' || p.external_id)
           FROM document_links l
           JOIN documents p ON p.id = l.document_id AND p.tenant_id = l.tenant_id
           WHERE l.tenant_id = d.tenant_id AND l.target_source = d.source
             AND l.target_external_id = d.external_id
           ORDER BY p.created_at, p.external_id
       ) AS resolved_by
FROM candidates k
JOIN picked c ON c.id = k.chunk_id
JOIN documents d ON d.id = c.document_id AND d.tenant_id = c.tenant_id

-- name: labelled_documents
SELECT external_id, title, body, labels, created_at
FROM documents
WHERE tenant_id = %(tenant_id)s AND kind = 'issue' AND cardinality(labels) > 0
  AND (%(before)s::timestamptz IS NULL OR created_at < %(before)s::timestamptz)
  AND (%(source)s::text IS NULL OR source = %(source)s::text)
ORDER BY created_at, external_id

-- name: labelled_watermark
-- Moves whenever a source's labelled history does: an issue labelled, unlabelled (the count, or
-- the time it was indexed again), edited while labelled. Read on the partial index of migration 0040.
SELECT count(*) AS issues, max(indexed_at) AS indexed_at
FROM documents
WHERE tenant_id = %(tenant_id)s AND source = %(source)s AND kind = 'issue'
  AND cardinality(labels) > 0

-- name: chunk_texts
-- The chunks that have a vector (the others are found by their words and stay so).
SELECT c.id, c.section, c.text, d.title
FROM chunks c
JOIN documents d ON d.id = c.document_id AND d.tenant_id = c.tenant_id
WHERE c.tenant_id = %(tenant_id)s AND c.embedding IS NOT NULL

-- name: update_chunk_vectors
UPDATE chunks c
SET space_id = %(space_id)s, dims = %(dims)s, embedding = u.embedding::vector
FROM unnest(%(ids)s::bigint[], %(embeddings)s::text[]) AS u (id, embedding)
WHERE c.tenant_id = %(tenant_id)s AND c.id = u.id

-- name: move_lexical_chunks
-- Chunks without a vector move to the new space with the rest (their dims follow the space).
UPDATE chunks SET space_id = %(space_id)s, dims = %(dims)s
WHERE tenant_id = %(tenant_id)s AND embedding IS NULL

-- name: index_summary
SELECT
    (SELECT count(*) FROM documents WHERE tenant_id = %(tenant_id)s) AS documents,
    (SELECT count(*) FROM chunks WHERE tenant_id = %(tenant_id)s) AS chunks,
    (SELECT count(*) FROM document_links WHERE tenant_id = %(tenant_id)s) AS links

-- name: documents_per_kind
SELECT kind, count(*) AS n FROM documents WHERE tenant_id = %(tenant_id)s GROUP BY kind ORDER BY kind

-- name: get_cursor
SELECT source, since, page, items_seen, finished_at FROM crawl_cursors
WHERE tenant_id = %(tenant_id)s AND source = %(source)s

-- name: save_cursor
INSERT INTO crawl_cursors (tenant_id, source, since, page, items_seen, finished_at)
VALUES (%(tenant_id)s, %(source)s, %(since)s, %(page)s, %(items_seen)s, %(finished_at)s)
ON CONFLICT (tenant_id, source) DO UPDATE SET
    since = EXCLUDED.since, page = EXCLUDED.page, items_seen = EXCLUDED.items_seen,
    finished_at = EXCLUDED.finished_at, updated_at = now()

-- name: stale_scratch_tenants
-- Scratch tenants a killed run left behind; a kept index is not one (kept_indexes_beyond).
SELECT id, name FROM tenants
WHERE scratch AND kept_for IS NULL
  AND created_at < now() - make_interval(secs => %(older_than_seconds)s)

-- name: delete_tenant
DELETE FROM tenants WHERE id = %(id)s AND scratch

-- name: kept_index
SELECT id FROM tenants WHERE scratch AND kept_for = %(key)s

-- name: keep_index
-- Claims the key for this (complete) index; none when a concurrent run claimed it first.
UPDATE tenants SET kept_for = %(key)s, used_at = now()
WHERE id = %(id)s AND scratch
  AND NOT EXISTS (SELECT 1 FROM tenants WHERE kept_for = %(key)s)
RETURNING id

-- name: use_kept_index
UPDATE tenants SET used_at = now() WHERE id = %(id)s AND kept_for IS NOT NULL

-- name: kept_indexes_beyond
-- The kept indexes past the ``keep`` most recently used.
SELECT id FROM tenants WHERE kept_for IS NOT NULL
ORDER BY used_at DESC, created_at DESC OFFSET %(keep)s

-- name: fixing_pulls
-- The pull requests that say they fix each of these documents (same source), with when they were
-- created: refine follows them to the commits that solved a similar task.
SELECT l.target_external_id AS target, p.external_id AS pull, p.created_at
FROM document_links l
JOIN documents p ON p.id = l.document_id AND p.tenant_id = l.tenant_id
WHERE l.tenant_id = %(tenant_id)s AND l.relation = 'fixes' AND l.target_source = %(source)s
  AND l.target_external_id = ANY(%(external_ids)s) AND p.source = %(source)s
ORDER BY l.target_external_id, p.created_at, p.external_id
