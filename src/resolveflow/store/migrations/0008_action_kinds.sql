-- Action kinds: github.issue_create opens an issue in one request (step 'create'); what a kind
-- created (an issue number and its page) is kept on the execution as result_ref / result_url.
ALTER TABLE execution_attempts DROP CONSTRAINT execution_attempts_step_check;
ALTER TABLE execution_attempts ADD CONSTRAINT execution_attempts_step_check
    CHECK (step IN ('comment', 'labels', 'create'));

ALTER TABLE executions ADD COLUMN result_ref text, ADD COLUMN result_url text;
GRANT UPDATE (result_ref, result_url) ON executions TO resolveflow_app;
