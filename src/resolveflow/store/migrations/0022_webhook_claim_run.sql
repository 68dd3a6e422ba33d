-- Convergence (issue 17): a webhook run's claim names the run it starts, chosen before the run
-- exists, so a worker killed between the claim and the run's first row leaves a claim whose run
-- can still be started, once, under that id (triage/webhooks.py). Older claims have none.
ALTER TABLE webhook_run_claims ADD COLUMN run_id uuid;
