-- One event, one run per tenant, whichever webhook brought it: the same GitHub event can arrive
-- through the GitHub App's webhook (claimed in its installation's tenant's scope), a tenant's
-- own hook (that tenant's scope) and the global hook (no tenant), each under its own delivery id.
-- The global hook's job now claims the event again in each tenant it fans out to
-- (triage/webhooks.py), so webhook_events_once refuses the second route in that tenant. The job
-- finds its delivery's claim by delivery id: this index.
CREATE INDEX webhook_events_delivery ON webhook_events (delivery_id);
