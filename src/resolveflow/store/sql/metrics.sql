-- name: metric_counts
-- A row per tenant and label (migration 0019): the caller adds them up.
SELECT metric, label, value FROM rf_metric_counts()
