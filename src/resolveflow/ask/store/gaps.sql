-- name: unanswered_asks
-- The questions asked since a time that got no answer: the fixed abstention ("nothing relates"),
-- "no page answers this for sure" (answerable false, not abstained) or nothing retrieved at all
-- (answerable NULL). Newest first.
SELECT id, question, abstained, created_at
FROM ask_records
WHERE tenant_id = %(tenant_id)s AND created_at >= %(since)s
  AND answerable IS NOT TRUE
ORDER BY created_at DESC
LIMIT %(limit)s
