-- Every attempt carries a wall-clock deadline by which its request has finished or been abandoned,
-- and a fingerprint of the token it was sent with. A reconciler never takes over an execution while
-- its latest attempt's deadline is still ahead: the request may still be on its way.
ALTER TABLE execution_attempts
    ADD COLUMN deadline_at timestamptz,
    ADD COLUMN token_fingerprint text CHECK (token_fingerprint ~ '^[0-9a-f]{16}$');

CREATE INDEX execution_attempts_deadline ON execution_attempts (execution_id, deadline_at);

-- The executor asks, for every execution it claims, whether an earlier one of the same digest or
-- lineage ended uncertain; only those few rows are indexed, so the question costs nothing when
-- there are none.
CREATE INDEX executions_uncertain ON executions (tenant_id) WHERE state IN ('unknown', 'not_sent');
