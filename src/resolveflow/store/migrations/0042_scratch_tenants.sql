-- Scratch tenants (an evaluation's) are marked, no longer told by their name alone: a command
-- that picks the only tenant and `tenants list` leave them out (workers still go through them:
-- evaluations run the real flows in theirs). `kept_for` is the key of the corpus whose index
-- `eval answers` keeps for its next run (set once the index is complete: a run killed while
-- indexing leaves none to reuse), `used_at` when a run last used it (the least recently used
-- kept index goes first).
ALTER TABLE tenants ADD COLUMN scratch boolean NOT NULL DEFAULT false;
ALTER TABLE tenants ADD COLUMN kept_for text UNIQUE CHECK (kept_for IS NULL OR scratch);
ALTER TABLE tenants ADD COLUMN used_at timestamptz;

UPDATE tenants SET scratch = true WHERE name LIKE 'rf-eval-%';
