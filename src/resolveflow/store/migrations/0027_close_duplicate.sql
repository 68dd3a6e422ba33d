-- Issue 31 part 4: github.issue_close_duplicate posts a notice, waits out a grace period and then
-- closes the issue as a duplicate unless someone objected. The wait is the execution back in the
-- queue (pending, not_before = the notice's time on GitHub + the grace period): nothing is held
-- while it waits and a restart changes nothing. Two facts of the notice are kept on the execution:
-- notice_at, the notice comment's created_at as GitHub stored it ("since the notice" is measured
-- on GitHub's clock), and watch_digest, a digest of the issue's title and body at that moment
-- (GitHub's REST API records no event for a body edit). The close is its own step, 'close'.
-- No state is added: an objection ends the execution partial (the notice was posted, the close
-- withdrawn), with the objection in its detail and an audit event.
ALTER TABLE executions ADD COLUMN notice_at timestamptz, ADD COLUMN watch_digest text;
GRANT UPDATE (notice_at, watch_digest) ON executions TO resolveflow_app;

ALTER TABLE execution_attempts DROP CONSTRAINT execution_attempts_step_check;
ALTER TABLE execution_attempts ADD CONSTRAINT execution_attempts_step_check
    CHECK (step IN ('comment', 'labels', 'create', 'send', 'close'));
