-- name: create_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version text PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- name: applied
SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version

-- name: record
INSERT INTO schema_migrations (version, name, checksum)
VALUES (%(version)s, %(name)s, %(checksum)s)

-- name: lock
SELECT pg_advisory_lock(%s)

-- name: unlock
SELECT pg_advisory_unlock(%s)

-- name: fingerprint
-- What the last complete upgrade left as the table's comment (store/migrate.py): NULL before it.
SELECT obj_description(to_regclass('schema_migrations'), 'pg_class') AS fingerprint

-- name: record_fingerprint
COMMENT ON TABLE schema_migrations IS %s
