-- name: queue_waiting
-- The queue's backlog: jobs ready to run and how long the oldest has waited (procrastinate's table).
SELECT count(*) AS waiting,
       coalesce(extract(epoch FROM now() - min(coalesce(scheduled_at, now()))), 0) AS oldest_seconds
FROM procrastinate_jobs
WHERE status = 'todo' AND (scheduled_at IS NULL OR scheduled_at <= now())
