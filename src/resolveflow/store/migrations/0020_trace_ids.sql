-- Traces (issue 17): an audit event written during a trace keeps the trace's id, so a person can
-- go from an audit row to the trace (and every log line of it carries the same id).
ALTER TABLE audit_events
    ADD COLUMN trace_id text CHECK (trace_id IS NULL OR trace_id ~ '^[0-9a-f]{32}$');
