-- Two rules the database now holds itself.
--
-- 1. An API token can be revoked (`resolveflow principals revoke-token`). The principal stays (its
--    records name it); its token no longer authenticates from the next request on, since every
--    request looks the token up (accounts/auth.py, no cache). A revoked token stays revoked: the
--    runtime role may set the moment once and never clear or move it.
ALTER TABLE principals ADD COLUMN token_revoked_at timestamptz;
GRANT UPDATE (token_revoked_at) ON principals TO resolveflow_app;

CREATE FUNCTION rf_guard_token_revocation() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.token_revoked_at IS NOT NULL
       AND NEW.token_revoked_at IS DISTINCT FROM OLD.token_revoked_at THEN
        RAISE EXCEPTION 'the API token of principal % was revoked already', OLD.id
            USING ERRCODE = 'RFX01';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER principals_token_revoked_once BEFORE UPDATE OF token_revoked_at ON principals
    FOR EACH ROW EXECUTE FUNCTION rf_guard_token_revocation();

-- 2. One github.issue_close_duplicate in flight per issue. Two lineages closing the same issue
--    (as a duplicate of one original or of two) would each post their notice. A lineage claims
--    its issue when its first version is inserted; the partial unique index lets one claim per
--    issue be live, so a second proposal is refused whatever code inserts it, and two inserting at
--    once cannot both succeed. An edit (a new version) claims again for its lineage: after a
--    rejection the claim was let go, and may have been taken meanwhile. The claim is let go when
--    the lineage's latest version is rejected or its execution ends (sent, partial, failed,
--    not_sent): then the issue may be proposed again (it was reopened, or nobody closed it).
--    Before its notice, an execution takes its lineage's claim again, so a lineage without one (made
--    before this migration) posts nothing while another holds the issue.
CREATE TABLE close_duplicate_claims (
    lineage_id uuid PRIMARY KEY REFERENCES proposals (id) ON DELETE CASCADE,  -- its first version
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    proposal_id uuid NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,  -- its latest version
    repository text NOT NULL CHECK (repository = lower(repository)),
    issue bigint NOT NULL CHECK (issue > 0),
    claimed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    released_at timestamptz
);

CREATE UNIQUE INDEX close_duplicate_claims_one_in_flight
    ON close_duplicate_claims (tenant_id, repository, issue) WHERE released_at IS NULL;
CREATE INDEX close_duplicate_claims_proposal ON close_duplicate_claims (proposal_id)
    WHERE released_at IS NULL;

CREATE FUNCTION rf_claim_close_duplicate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.action->>'kind' = 'github.issue_close_duplicate' THEN
        INSERT INTO close_duplicate_claims (lineage_id, tenant_id, proposal_id, repository, issue)
        VALUES (NEW.lineage_id, NEW.tenant_id, NEW.id,
                lower(NEW.action->'target'->>'repository'),
                (NEW.action->'target'->>'issue')::bigint)
        ON CONFLICT (lineage_id) DO UPDATE
            SET proposal_id = EXCLUDED.proposal_id, released_at = NULL,
                claimed_at = clock_timestamp();
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER proposals_claim_close_duplicate AFTER INSERT ON proposals
    FOR EACH ROW EXECUTE FUNCTION rf_claim_close_duplicate();

-- Only the latest version's rejection, or its execution's end, lets the claim go: the claim
-- names that version, so the end of an older version's execution (refused after an edit)
-- leaves the newer version's claim in place.
CREATE FUNCTION rf_release_close_duplicate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE close_duplicate_claims SET released_at = clock_timestamp()
    WHERE tenant_id = NEW.tenant_id AND proposal_id = NEW.proposal_id AND released_at IS NULL;
    RETURN NULL;
END
$$;

CREATE TRIGGER approvals_release_close_duplicate AFTER INSERT ON approvals
    FOR EACH ROW WHEN (NEW.decision = 'rejected')
    EXECUTE FUNCTION rf_release_close_duplicate();

CREATE TRIGGER executions_release_close_duplicate AFTER UPDATE OF state ON executions
    FOR EACH ROW WHEN (NEW.state IN ('sent', 'partial', 'failed', 'not_sent')
                       AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION rf_release_close_duplicate();

-- The lineages in flight today claim their issues: per issue the one whose notice is out, else
-- the oldest. Any other one claims nothing and is refused before its notice. A non-superuser
-- owner is subject to forced row-level security and would see no tenant's rows: it is lifted for
-- this transaction and forced again.
ALTER TABLE proposals NO FORCE ROW LEVEL SECURITY;
ALTER TABLE approvals NO FORCE ROW LEVEL SECURITY;
ALTER TABLE executions NO FORCE ROW LEVEL SECURITY;

INSERT INTO close_duplicate_claims (lineage_id, tenant_id, proposal_id, repository, issue)
SELECT DISTINCT ON (p.tenant_id, lower(p.action->'target'->>'repository'),
                    (p.action->'target'->>'issue')::bigint)
       p.lineage_id, p.tenant_id, p.id, lower(p.action->'target'->>'repository'),
       (p.action->'target'->>'issue')::bigint
FROM proposals p
LEFT JOIN executions e ON e.tenant_id = p.tenant_id AND e.proposal_id = p.id
WHERE p.action->>'kind' = 'github.issue_close_duplicate'
  AND p.version = (SELECT max(v.version) FROM proposals v
                    WHERE v.tenant_id = p.tenant_id AND v.lineage_id = p.lineage_id)
  AND NOT EXISTS (SELECT 1 FROM approvals a
                   WHERE a.tenant_id = p.tenant_id AND a.proposal_id = p.id
                     AND a.decision = 'rejected')
  AND (e.state IS NULL OR e.state IN ('pending', 'sending', 'unknown'))
ORDER BY p.tenant_id, lower(p.action->'target'->>'repository'),
         (p.action->'target'->>'issue')::bigint, e.comment_id IS NULL, p.created_at;

ALTER TABLE proposals FORCE ROW LEVEL SECURITY;
ALTER TABLE approvals FORCE ROW LEVEL SECURITY;
ALTER TABLE executions FORCE ROW LEVEL SECURITY;

SELECT rf_isolate_tenant_tables(ARRAY['close_duplicate_claims']);
GRANT SELECT, INSERT, UPDATE (proposal_id, released_at, claimed_at)
    ON close_duplicate_claims TO resolveflow_app;
