-- name: insert_delivery
-- Nothing comes back for a delivery id already seen: the redelivery starts nothing.
INSERT INTO webhook_deliveries
    (delivery_id, event, action, repository, issue_number, tenant_id, queued, ignored)
VALUES (%(delivery_id)s, %(event)s, %(action)s, %(repository)s, %(issue_number)s, %(tenant_id)s::uuid,
        %(ignored)s::text IS NULL, %(ignored)s)
ON CONFLICT (delivery_id) DO NOTHING
RETURNING delivery_id

-- name: claim_event
-- The first delivery of an event claims it; a later one (a replay) gets nothing back, and so
-- does an event older than the retention window, whose earlier claim may have been pruned (or
-- dated more than a day ahead, whose claim would outlive the window).
INSERT INTO webhook_events
    (tenant_id, event, repository, issue_number, action, subject, updated_at, delivery_id)
SELECT %(tenant_id)s::uuid, %(event)s::text, %(repository)s::text, %(issue_number)s::integer,
       %(action)s::text, %(subject)s::text, %(updated_at)s::timestamptz, %(delivery_id)s::text
WHERE %(updated_at)s::timestamptz BETWEEN clock_timestamp() - %(max_age)s::interval
                                      AND clock_timestamp() + interval '1 day'
ON CONFLICT ON CONSTRAINT webhook_events_once DO NOTHING
RETURNING delivery_id

-- name: event_claimed_by
SELECT delivery_id FROM webhook_events
WHERE tenant_id IS NOT DISTINCT FROM %(tenant_id)s::uuid AND event = %(event)s
  AND repository = %(repository)s AND issue_number = %(issue_number)s AND action = %(action)s
  AND subject = %(subject)s AND updated_at = %(updated_at)s

-- name: event_of_delivery
-- The event a delivery claimed when it was recorded, in its own scope (its job later claims the
-- same event in other tenants' scopes under the same delivery id: those rows are not this one).
SELECT tenant_id, event, repository, issue_number, action, subject, updated_at
FROM webhook_events
WHERE delivery_id = %(delivery_id)s AND tenant_id IS NOT DISTINCT FROM %(scope)s::uuid

-- name: delivery_by_id
SELECT delivery_id, event, action, repository, issue_number, tenant_id, queued, ignored,
       received_at
FROM webhook_deliveries WHERE delivery_id = %(delivery_id)s

-- name: count_deliveries
SELECT count(*) AS n FROM webhook_deliveries

-- name: claim_webhook_run
INSERT INTO webhook_run_claims (delivery_id, tenant_id, run_id)
VALUES (%(delivery_id)s, %(tenant_id)s, %(run_id)s)
ON CONFLICT DO NOTHING
RETURNING delivery_id

-- name: unstarted_claim
-- A claim whose run never got its first row (its worker died in between): that run id.
SELECT c.run_id FROM webhook_run_claims c
WHERE c.delivery_id = %(delivery_id)s AND c.tenant_id = %(tenant_id)s AND c.run_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.tenant_id = c.tenant_id AND r.id = c.run_id)

-- name: prune_deliveries
SELECT rf_prune_webhook_deliveries(make_interval(days => %(days)s)) AS pruned

-- name: upsert_secret
INSERT INTO webhook_secrets (tenant_id, ciphertext) VALUES (%(tenant_id)s, %(ciphertext)s)
ON CONFLICT (tenant_id) DO UPDATE
SET ciphertext = excluded.ciphertext, updated_at = clock_timestamp()

-- name: secret_ciphertext
SELECT ciphertext FROM webhook_secrets WHERE tenant_id = %(tenant_id)s

-- name: delete_secret
DELETE FROM webhook_secrets WHERE tenant_id = %(tenant_id)s RETURNING tenant_id
