-- Mail in the index (issue 15). A mailbox's messages are kept whole in mail_messages (threads by
-- In-Reply-To/References, a Message-ID once per tenant and mailbox); every sent reply that
-- answers a request becomes one document of kind 'email' in the shared index, source
-- 'mail:<mailbox>'. Email documents and their chunks carry their mailbox, and only the mail
-- search reads them, filtered by tenant and by the permitted mailboxes before ranking. The
-- ordinary search never sees them: their chunks stay out of the nearest-neighbour function, out
-- of the postings and term counts (so idf and the tenant's chunk count are what they were), and
-- the passage and answer read paths skip them.

CREATE TABLE mail_messages (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    mailbox text NOT NULL CHECK (mailbox = lower(mailbox) AND mailbox ~ '^[^@\s]+@[^@\s]+$'),
    message_id text NOT NULL CHECK (length(message_id) BETWEEN 3 AND 998),
    direction text NOT NULL CHECK (direction IN ('sent', 'received')),
    in_reply_to text,
    "references" text[] NOT NULL DEFAULT '{}',
    -- The first message of the thread as this message knows it: a thread's messages share it
    -- whichever order they were imported in, as long as each names the thread's start.
    thread_root text NOT NULL,
    -- For a sent reply: the received message it answers, once that message is here.
    answers text,
    from_address text NOT NULL,
    from_name text,
    to_addresses text[] NOT NULL DEFAULT '{}',
    cc_addresses text[] NOT NULL DEFAULT '{}',
    subject text NOT NULL DEFAULT '',
    sent_at timestamptz,
    text text NOT NULL DEFAULT '' CHECK (length(text) <= 200000),
    imported_at timestamptz NOT NULL DEFAULT now(),
    forgotten_at timestamptz,
    CONSTRAINT mail_messages_unique UNIQUE (tenant_id, mailbox, message_id),
    CHECK (answers IS NULL OR direction = 'sent')
);
CREATE INDEX mail_messages_thread ON mail_messages (tenant_id, mailbox, thread_root);
CREATE INDEX mail_messages_unanswered ON mail_messages (tenant_id, mailbox, in_reply_to)
    WHERE direction = 'sent';

SELECT rf_isolate_tenant_tables(ARRAY['mail_messages']);
GRANT SELECT, INSERT ON mail_messages TO resolveflow_app;
GRANT UPDATE (answers, forgotten_at) ON mail_messages TO resolveflow_app;

ALTER TABLE documents DROP CONSTRAINT documents_kind_check;
ALTER TABLE documents ADD CONSTRAINT documents_kind_check
    CHECK (kind IN ('issue', 'pull', 'comment', 'runbook', 'doc', 'email'));
ALTER TABLE documents ADD COLUMN mailbox text;
ALTER TABLE documents ADD CONSTRAINT documents_mailbox_is_email CHECK (
    (kind = 'email') = (mailbox IS NOT NULL) AND (mailbox IS NULL OR source = 'mail:' || mailbox)
);
ALTER TABLE chunks ADD COLUMN mailbox text;
-- A chunk's mailbox is its document's: insert_chunks copies it from the document row.
ALTER TABLE chunks ADD CONSTRAINT chunks_mailbox_shape
    CHECK (mailbox IS NULL OR mailbox = lower(mailbox));
CREATE INDEX chunks_by_mailbox ON chunks (tenant_id, mailbox) WHERE mailbox IS NOT NULL;

-- Mail chunks keep no postings and no term counts: the ordinary lexical branch and its idf never
-- see them (the mail search ranks its few rows by their tsvector directly).
CREATE OR REPLACE FUNCTION rf_count_terms() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO chunk_terms (tenant_id, lexeme, chunk_id, impact)
        SELECT n.tenant_id, i.lexeme, n.id, i.impact
        FROM new_chunks n, rf_term_impacts(n.tsv) AS i WHERE n.mailbox IS NULL;
        INSERT INTO term_stats AS s (tenant_id, lexeme, chunks)
        SELECT n.tenant_id, t.lexeme, count(*)::integer
        FROM new_chunks n, unnest(n.tsv) AS t
        WHERE n.mailbox IS NULL
        GROUP BY n.tenant_id, t.lexeme
        ORDER BY n.tenant_id, t.lexeme
        ON CONFLICT (tenant_id, lexeme) DO UPDATE SET chunks = s.chunks + EXCLUDED.chunks;
    ELSE
        DELETE FROM chunk_terms c
        USING old_chunks n, unnest(n.tsv) AS t
        WHERE n.mailbox IS NULL
          AND c.tenant_id = n.tenant_id AND c.lexeme = t.lexeme AND c.chunk_id = n.id;
        UPDATE term_stats s SET chunks = greatest(0, s.chunks - o.removed)
        FROM (
            SELECT n.tenant_id, t.lexeme, count(*)::integer AS removed
            FROM old_chunks n, unnest(n.tsv) AS t
            WHERE n.mailbox IS NULL
            GROUP BY n.tenant_id, t.lexeme
        ) o
        WHERE s.tenant_id = o.tenant_id AND s.lexeme = o.lexeme;
    END IF;
    RETURN NULL;
END
$$;

-- The tenant's chunk count is the ordinary search's (exact or HNSW, the BM25 total): mail is not
-- in it.
CREATE OR REPLACE FUNCTION rf_count_chunks() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE retrieval_indexes r SET chunk_count = r.chunk_count + n.added, updated_at = now()
        FROM (SELECT tenant_id, count(*) AS added FROM new_chunks WHERE mailbox IS NULL
              GROUP BY tenant_id) n
        WHERE r.tenant_id = n.tenant_id;
    ELSE
        UPDATE retrieval_indexes r
        SET chunk_count = greatest(0, r.chunk_count - n.removed), updated_at = now()
        FROM (SELECT tenant_id, count(*) AS removed FROM old_chunks WHERE mailbox IS NULL
              GROUP BY tenant_id) n
        WHERE r.tenant_id = n.tenant_id;
    END IF;
    RETURN NULL;
END
$$;

-- The ordinary vector branch: as in 0006, without mail chunks.
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
            'AND c.mailbox IS NULL '
            'AND ($4::timestamptz IS NULL OR c.created_at < $4) '
            'ORDER BY c.embedding <=> $1, c.id LIMIT $5'
            USING p_query, p_tenant, p_space, p_as_of, p_limit;
    ELSE
        -- The dimension is an integer typmod; it cannot be a bind parameter. A mail chunk the
        -- HNSW scan returns is dropped here; a scan left short falls back to exact search.
        RETURN QUERY EXECUTE format(
            'SELECT c.id, (c.embedding::vector(%1$s) <=> $1::vector(%1$s))::double precision '
            'FROM chunks c WHERE c.dims = %1$s AND c.tenant_id = $2 AND c.space_id = $3 '
            'AND c.mailbox IS NULL '
            'AND ($4::timestamptz IS NULL OR c.created_at < $4) '
            'ORDER BY c.embedding::vector(%1$s) <=> $1::vector(%1$s) LIMIT $5', d)
            USING p_query, p_tenant, p_space, p_as_of, p_limit;
    END IF;
END
$$;
