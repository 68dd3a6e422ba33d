-- Write pacing (issue 17): one token bucket per credential a write goes out with, shared by every
-- worker process (gate/domain/pace.py). Keys name a credential, never hold one: "github:service",
-- "github:approver:<64-bit fingerprint>", "<target>:tenant:<tenant id>". No tenant column and no
-- tenant data, so no row-level security: the allowance of a token shared by tenants is shared.
CREATE TABLE write_pace (
    pace_key text PRIMARY KEY
        CHECK (pace_key ~ '^(github:service|github:approver:[0-9a-f]{16}|(gitlab|smtp):tenant:[0-9a-f-]{36})$'),
    tokens double precision NOT NULL,
    refilled_at timestamptz NOT NULL,
    next_at timestamptz NOT NULL
);
GRANT SELECT, INSERT, UPDATE ON write_pace TO resolveflow_app;

-- The slot an execution given back to the queue holds: it is sent at that time, in its turn.
ALTER TABLE executions ADD COLUMN pace_slot_at timestamptz;
GRANT UPDATE (pace_slot_at) ON executions TO resolveflow_app;
