-- An investigation's best related document's relevance, in a column of its own: what its
-- duplicate suggestion was made with, and what the team's decisions on it are fitted by
-- (gate/store/feedback.sql), read without parsing the snippets' JSON in the gate's SQL. Filled
-- from the snippets of the investigations recorded before it.
ALTER TABLE investigations ADD COLUMN best_relevance double precision
    CHECK (best_relevance IS NULL OR best_relevance BETWEEN -1 AND 2);

UPDATE investigations i SET best_relevance = (
    SELECT max((s ->> 'relevance')::double precision)
    FROM jsonb_array_elements(i.snippets) s
    WHERE jsonb_typeof(s -> 'relevance') = 'number'
);
