-- name: insert_delivery
-- Nothing comes back for a delivery id already seen: the redelivery starts nothing.
INSERT INTO webhook_deliveries (delivery_id, event, action, repository, issue_number, queued)
VALUES (%(delivery_id)s, %(event)s, %(action)s, %(repository)s, %(issue_number)s, %(queued)s)
ON CONFLICT (delivery_id) DO NOTHING
RETURNING delivery_id

-- name: delivery_by_id
SELECT delivery_id, event, action, repository, issue_number, queued, received_at
FROM webhook_deliveries WHERE delivery_id = %(delivery_id)s

-- name: count_deliveries
SELECT count(*) AS n FROM webhook_deliveries

-- name: claim_webhook_run
INSERT INTO webhook_run_claims (delivery_id, tenant_id)
VALUES (%(delivery_id)s, %(tenant_id)s)
ON CONFLICT DO NOTHING
RETURNING delivery_id
