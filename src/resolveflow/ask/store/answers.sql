-- name: term_cover
-- Which of the question's terms occur anywhere in each document (any chunk): the answerability
-- rule's "share of the question's rare terms the top document covers". Postings only.
SELECT c.document_id, array_agg(DISTINCT t.lexeme) AS lexemes
FROM chunk_terms t
JOIN chunks c ON c.id = t.chunk_id AND c.tenant_id = t.tenant_id
WHERE t.tenant_id = %(tenant_id)s AND t.lexeme = ANY(%(terms)s::text[])
  AND c.document_id = ANY(%(document_ids)s::uuid[])
GROUP BY c.document_id

-- name: title_cover
-- For each document, its title's lexemes (camelCase split into words) and how many of them the
-- question holds.
WITH titles AS (
    SELECT d.id, array(
               SELECT lexeme FROM unnest(to_tsvector('english', rf_lexical_text(
                   regexp_replace(d.title, '([a-z])([A-Z])', '\1 \2', 'g'))))
           ) AS lexemes
    FROM documents d
    WHERE d.tenant_id = %(tenant_id)s AND d.id = ANY(%(document_ids)s::uuid[])
),
question AS (
    SELECT array(
               SELECT lexeme FROM unnest(to_tsvector('english', rf_lexical_text(%(question)s)))
           ) AS lexemes
)
SELECT t.id AS document_id, cardinality(t.lexemes) AS title_terms,
       (SELECT count(*) FROM unnest(t.lexemes) AS l WHERE l = ANY(q.lexemes)) AS matched
FROM titles t, question q

-- name: document_text
SELECT id, source, external_id, kind, title, url, body FROM documents
WHERE tenant_id = %(tenant_id)s AND id = %(document_id)s AND mailbox IS NULL

-- name: document_id_by_path
-- The page a stub points to: same tenant, same source (a docs folder), by its path.
SELECT id FROM documents
WHERE tenant_id = %(tenant_id)s AND source = %(source)s AND external_id = %(external_id)s
  AND mailbox IS NULL

-- name: document_chunks
SELECT id, ordinal, text FROM chunks
WHERE tenant_id = %(tenant_id)s AND document_id = %(document_id)s AND mailbox IS NULL
ORDER BY ordinal

-- name: chunks_by_id
SELECT c.id, c.document_id, c.text, d.title, d.url, d.source, d.external_id
FROM chunks c
JOIN documents d ON d.id = c.document_id AND d.tenant_id = c.tenant_id
WHERE c.tenant_id = %(tenant_id)s AND c.id = ANY(%(ids)s::bigint[]) AND c.mailbox IS NULL

-- name: insert_ask_record
INSERT INTO ask_records (
    tenant_id, principal_id, question, retrieved, features, answerable, abstained, answer_text,
    citations, provider, model, generator, prompt_version
) VALUES (
    %(tenant_id)s, %(principal_id)s, %(question)s, %(retrieved)s, %(features)s, %(answerable)s,
    %(abstained)s, %(answer_text)s, %(citations)s, %(provider)s, %(model)s, %(generator)s,
    %(prompt_version)s
)
RETURNING id, created_at

-- name: ask_record
SELECT id, tenant_id, principal_id, question, retrieved, features, answerable, abstained,
       answer_text, citations, provider, model, generator, prompt_version, created_at
FROM ask_records
WHERE tenant_id = %(tenant_id)s AND id = %(id)s

-- name: question_terms
-- Every word of the question as the index reads it (stemmed, durations expanded) and in how many
-- of the tenant's chunks it occurs: 0 for a word the index has never seen, which answerability
-- counts with the highest weight (an off-topic question is mostly such words). With each, the
-- question's own word it came from (its first), which is what a person is shown: "packages", not
-- the stem "packag". ts_debug reads the text as to_tsvector does, token by token.
SELECT q.lexeme, q.word, coalesce(s.chunks, 0)::bigint AS chunks
FROM (
    SELECT DISTINCT ON (lexeme) lexeme, lower(d.token) AS word
    FROM ts_debug('english', rf_lexical_text(%(question)s))
        WITH ORDINALITY AS d(alias, description, token, dictionaries, dictionary, lexemes, n),
        unnest(d.lexemes) AS lexeme
    ORDER BY lexeme, d.n
) AS q
LEFT JOIN term_stats s ON s.tenant_id = %(tenant_id)s AND s.lexeme = q.lexeme
ORDER BY q.lexeme

-- name: known_names
-- How many of the given names the index holds: a name counts when one of its words, read as the
-- index reads text, is in some chunk of the tenant's.
SELECT count(*)::bigint AS known
FROM unnest(%(names)s::text[]) AS n(name)
WHERE EXISTS (
    SELECT 1
    FROM unnest(to_tsvector('english', rf_lexical_text(n.name))) AS l
    JOIN term_stats s ON s.tenant_id = %(tenant_id)s AND s.lexeme = l.lexeme AND s.chunks > 0
)

-- name: page_heads
-- The beginning of each document (its usage or synopsis block) and its Markdown headings (a
-- settings page names each setting in one), for page_names.
SELECT id, external_id, title, left(body, %(head_chars)s) AS head,
       array(
           SELECT m[1] FROM regexp_matches(body, '^#{1,6}[ \t]+([^\n]+)$', 'gn') AS m
           LIMIT %(max_headings)s
       ) AS headings
FROM documents
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(document_ids)s::uuid[]) AND mailbox IS NULL

-- name: calibration_titles
-- A fixed sample of the tenant's document titles (the same sample for the same index), the
-- pseudo-questions of ask's calibration.
SELECT title FROM documents
WHERE tenant_id = %(tenant_id)s AND mailbox IS NULL AND title <> ''
ORDER BY md5(external_id), id
LIMIT %(limit)s

-- name: nearest_cosine
-- The highest cosine any of the tenant's chunks reaches for a query vector (exact).
SELECT 1 - min(n.distance) AS cosine
FROM rf_nearest_chunks(%(tenant_id)s, %(space_id)s, %(query_vector)s::vector, 1, NULL, true) AS n

-- name: calibration
SELECT space_id, chunk_count, unrelated, related, computed_at
FROM ask_calibrations WHERE tenant_id = %(tenant_id)s

-- name: save_calibration
INSERT INTO ask_calibrations (tenant_id, space_id, chunk_count, unrelated, related)
VALUES (%(tenant_id)s, %(space_id)s, %(chunk_count)s, %(unrelated)s, %(related)s)
ON CONFLICT (tenant_id) DO UPDATE
SET space_id = EXCLUDED.space_id, chunk_count = EXCLUDED.chunk_count,
    unrelated = EXCLUDED.unrelated, related = EXCLUDED.related, computed_at = now()

-- name: passage_terms
-- Which of the question's terms each passage holds, read as the index reads text (stemmed,
-- durations as words): the passage choice's shared words. Passages are given in order; ``n``
-- is a passage's place (1-based).
SELECT u.n, array(
    SELECT v.lexeme FROM unnest(to_tsvector('english', rf_lexical_text(u.text))) AS v
    WHERE v.lexeme = ANY(%(terms)s::text[])
) AS lexemes
FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS u(text, n)

-- name: head_cosines
-- Each document's head chunk (its title and first paragraph: what the page is about) against
-- the question's vector.
SELECT c.document_id, 1 - (c.embedding <=> %(query_vector)s::vector) AS cosine
FROM chunks c
WHERE c.tenant_id = %(tenant_id)s AND c.document_id = ANY(%(document_ids)s::uuid[])
  AND c.ordinal = 0 AND c.mailbox IS NULL
