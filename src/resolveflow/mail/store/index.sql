-- Mail messages and the mail search (migration 0017; mail/importer.py, mail_search.py).

-- name: insert_message
INSERT INTO mail_messages (
    tenant_id, mailbox, message_id, direction, in_reply_to, "references", thread_root,
    from_address, from_name, to_addresses, cc_addresses, subject, sent_at, text
) VALUES (
    %(tenant_id)s, %(mailbox)s, %(message_id)s, %(direction)s, %(in_reply_to)s,
    %(references)s, %(thread_root)s, %(from_address)s, %(from_name)s, %(to)s, %(cc)s,
    %(subject)s, %(sent_at)s, %(text)s
)
ON CONFLICT (tenant_id, mailbox, message_id) DO NOTHING
RETURNING message_id

-- name: link_replies
-- Each sent reply not yet linked answers the received message it replies to: In-Reply-To first,
-- else the latest of its References that is here. Runs after every import, so a reply imported
-- before its request is linked when the request arrives.
UPDATE mail_messages r SET answers = (
    SELECT q.message_id FROM mail_messages q
    WHERE q.tenant_id = r.tenant_id AND q.mailbox = r.mailbox AND q.direction = 'received'
      AND (q.message_id = r.in_reply_to OR q.message_id = ANY(r."references"))
    ORDER BY q.message_id = r.in_reply_to DESC,
             array_position(r."references", q.message_id) DESC NULLS LAST
    LIMIT 1
)
WHERE r.tenant_id = %(tenant_id)s AND r.mailbox = %(mailbox)s AND r.direction = 'sent'
  AND r.answers IS NULL
  AND EXISTS (
      SELECT 1 FROM mail_messages q
      WHERE q.tenant_id = r.tenant_id AND q.mailbox = r.mailbox AND q.direction = 'received'
        AND (q.message_id = r.in_reply_to OR q.message_id = ANY(r."references"))
  )

-- name: exchanges
-- The mailbox's examples: each sent reply with the request it answers, neither forgotten.
SELECT r.message_id AS reply_id, r.subject, r.text AS reply_text, r.sent_at,
       q.message_id AS request_id, q.text AS request_text
FROM mail_messages r
JOIN mail_messages q
  ON q.tenant_id = r.tenant_id AND q.mailbox = r.mailbox AND q.message_id = r.answers
WHERE r.tenant_id = %(tenant_id)s AND r.mailbox = %(mailbox)s AND r.direction = 'sent'
  AND r.forgotten_at IS NULL AND q.forgotten_at IS NULL AND r.text <> ''
ORDER BY r.sent_at NULLS LAST, r.message_id

-- name: forget_message
UPDATE mail_messages SET forgotten_at = coalesce(forgotten_at, now())
WHERE tenant_id = %(tenant_id)s AND mailbox = %(mailbox)s AND message_id = %(message_id)s
RETURNING direction

-- name: replies_answering
SELECT message_id FROM mail_messages
WHERE tenant_id = %(tenant_id)s AND mailbox = %(mailbox)s AND answers = %(message_id)s
ORDER BY message_id

-- name: thread
SELECT message_id, direction, subject, sent_at FROM mail_messages
WHERE tenant_id = %(tenant_id)s AND mailbox = %(mailbox)s AND thread_root = %(thread_root)s
ORDER BY sent_at NULLS LAST, message_id

-- name: received_message
-- The request as the mailbox received it (mail import): whom a reply to it may go to.
SELECT from_address, to_addresses, cc_addresses FROM mail_messages
WHERE tenant_id = %(tenant_id)s AND mailbox = %(mailbox)s AND message_id = %(message_id)s
  AND direction = 'received'

-- name: thread_root
SELECT thread_root FROM mail_messages
WHERE tenant_id = %(tenant_id)s AND mailbox = %(mailbox)s AND message_id = %(message_id)s

-- name: mail_candidates
-- The mail search: only this tenant's chunks of the permitted mailboxes are ranked (the filter is
-- in the scan, before ORDER BY ... LIMIT), exactly by cosine and by the words of the query (an OR
-- of its terms, ts_rank over the chunk's tsvector: mail chunks keep no postings). Same row shape
-- as hybrid_candidates, so retrieval/fusion.py fuses both.
WITH mine AS MATERIALIZED (
    SELECT c.id, c.embedding, c.tsv FROM chunks c
    WHERE c.tenant_id = %(tenant_id)s AND c.mailbox = ANY(%(mailboxes)s::text[])
      AND c.space_id = %(space_id)s
),
vec AS (
    SELECT m.id AS chunk_id, (m.embedding <=> %(query_vector)s::vector)::double precision
               AS distance,
           row_number() OVER (ORDER BY m.embedding <=> %(query_vector)s::vector, m.id) AS vrank
    FROM mine m WHERE m.embedding IS NOT NULL
    ORDER BY vrank LIMIT %(limit)s
),
lex AS (
    SELECT m.id AS chunk_id, ts_rank(m.tsv, t.query)::double precision AS score
    FROM mine m, websearch_to_tsquery('english', %(terms)s) AS t (query)
    WHERE m.tsv @@ t.query
    ORDER BY score DESC, m.id LIMIT %(limit)s
),
lex_ranked AS (
    SELECT chunk_id, score, row_number() OVER (ORDER BY score DESC, chunk_id) AS lrank FROM lex
),
candidates AS (
    SELECT coalesce(v.chunk_id, l.chunk_id) AS chunk_id, v.distance, v.vrank, l.score, l.lrank
    FROM vec v FULL JOIN lex_ranked l ON l.chunk_id = v.chunk_id
),
-- By primary key, as in hybrid_candidates (a join under RLS scanned the tenant's chunks).
picked AS (
    SELECT c.* FROM chunks c
    WHERE c.id = ANY (ARRAY(SELECT chunk_id FROM candidates)) AND c.tenant_id = %(tenant_id)s
)
SELECT c.id AS chunk_id, c.document_id, c.ordinal, c.section, c.text,
       coalesce(
           k.distance,
           c.embedding <=> %(query_vector)s::vector,
           (SELECT h.embedding <=> %(query_vector)s::vector FROM chunks h
             WHERE h.document_id = c.document_id AND h.tenant_id = c.tenant_id
               AND h.embedding IS NOT NULL
             ORDER BY h.ordinal LIMIT 1),
           1.0
       ) AS distance, k.vrank,
       coalesce(k.score, 0) AS lexical_score, k.lrank,
       d.source, d.external_id, d.kind, d.title, d.mailbox
FROM candidates k
JOIN picked c ON c.id = k.chunk_id
JOIN documents d ON d.id = c.document_id AND d.tenant_id = c.tenant_id

-- name: exchange_texts
SELECT r.mailbox, r.message_id AS reply_id, r.subject, r.text AS reply_text, r.sent_at,
       q.message_id AS request_id, q.text AS request_text
FROM mail_messages r
JOIN mail_messages q
  ON q.tenant_id = r.tenant_id AND q.mailbox = r.mailbox AND q.message_id = r.answers
WHERE r.tenant_id = %(tenant_id)s AND r.mailbox = ANY(%(mailboxes)s::text[])
  AND r.message_id = ANY(%(reply_ids)s::text[])
  AND r.forgotten_at IS NULL AND q.forgotten_at IS NULL

-- name: word_exchanges
-- How many of the mailbox's examples use each word, by the index's own stemming ("mugs" counts
-- "mug"); a word the index keeps no lexeme of (a stop word) says so. Counted on the request
-- documents, which hold the request and the reply (a reply document repeats its reply). The fit
-- check's counts (mail/domain/example_fit.py): the words asked are a draft's few, at most 64.
-- (Unnesting the chunks' tsvectors instead was 50 times slower.)
WITH asked AS MATERIALIZED (
    SELECT w.word, plainto_tsquery('english', w.word) AS query
    FROM unnest(%(words)s::text[]) AS w (word)
),
mine AS MATERIALIZED (
    SELECT c.document_id, c.tsv FROM chunks c
    WHERE c.tenant_id = %(tenant_id)s AND c.mailbox = %(mailbox)s
      AND c.document_id IN (
          SELECT d.id FROM documents d
          WHERE d.tenant_id = %(tenant_id)s AND d.mailbox = %(mailbox)s
            AND d.external_id NOT LIKE %(reply_documents)s
      )
)
SELECT a.word, numnode(a.query) = 0 AS stop,
       (SELECT count(DISTINCT m.document_id) FROM mine m
         WHERE numnode(a.query) > 0 AND m.tsv @@ a.query)::integer AS exchanges
FROM asked a

-- name: mailbox_examples
SELECT count(*)::integer AS examples FROM documents
WHERE tenant_id = %(tenant_id)s AND mailbox = %(mailbox)s
  AND external_id NOT LIKE %(reply_documents)s

-- name: head_distances
-- The cosine distance of each named document's head (its first embedded chunk) to the query: the
-- side of an exchange (its request or its reply document) that neither branch of
-- mail_candidates brought back.
SELECT d.mailbox, d.external_id,
       (SELECT (h.embedding <=> %(query_vector)s::vector)::double precision FROM chunks h
         WHERE h.document_id = d.id AND h.tenant_id = d.tenant_id
           AND h.space_id = %(space_id)s AND h.embedding IS NOT NULL
         ORDER BY h.ordinal LIMIT 1) AS distance
FROM documents d
WHERE d.tenant_id = %(tenant_id)s AND d.mailbox = ANY(%(mailboxes)s::text[])
  AND d.external_id = ANY(%(external_ids)s::text[])
