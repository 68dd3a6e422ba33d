-- name: queue_lock
SELECT pg_advisory_xact_lock(%(key)s)

-- name: queue_installed
SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS installed

-- name: grant_queue_tables
-- The runtime role may use procrastinate's tables, sequences and functions (and nothing else of
-- theirs); run by the owner after procrastinate's schema is applied.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.relname, c.relkind FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relname LIKE 'procrastinate%'
               AND c.relkind IN ('r', 'v', 'S') LOOP
        IF r.relkind IN ('r', 'v') THEN
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO resolveflow_app', r.relname);
        ELSE
            EXECUTE format('GRANT USAGE, SELECT, UPDATE ON SEQUENCE %I TO resolveflow_app', r.relname);
        END IF;
    END LOOP;
END
$$

-- name: jobs_by_task
SELECT id, task_name, status, args, attempts FROM procrastinate_jobs
WHERE task_name = %(task_name)s ORDER BY id

-- name: set_runtime_role
SET ROLE resolveflow_app
