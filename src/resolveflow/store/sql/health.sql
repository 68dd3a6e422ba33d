-- name: queue_waiting
-- The queue's backlog: jobs ready to run and how long the oldest has waited (procrastinate's table).
SELECT count(*) AS waiting,
       coalesce(extract(epoch FROM now() - min(coalesce(scheduled_at, now()))), 0) AS oldest_seconds
FROM procrastinate_jobs
WHERE status = 'todo' AND (scheduled_at IS NULL OR scheduled_at <= now())

-- name: live_workers
-- Workers anywhere (procrastinate's table) whose heartbeat is recent: a worker beats every 10 s.
SELECT count(*) AS live
FROM procrastinate_workers
WHERE last_heartbeat >= now() - make_interval(secs => %(seconds)s)
