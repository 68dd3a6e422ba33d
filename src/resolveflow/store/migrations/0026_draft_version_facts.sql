-- Staff facts per draft version (issue 29: `mail edit --facts`). A reviewer who learns a fact
-- (an order number, an amount) adds it to an edit instead of drafting again; each version is
-- checked against the facts it was written with, so those facts are the version's, recorded with
-- it and never changed. The draft's own column stays the facts it was first drafted with.
ALTER TABLE mail_draft_versions
    ADD COLUMN facts text NOT NULL DEFAULT '' CHECK (length(facts) <= 20000);

UPDATE mail_draft_versions AS v SET facts = d.facts
FROM mail_drafts AS d
WHERE d.id = v.draft_id AND d.tenant_id = v.tenant_id AND d.facts <> '';
