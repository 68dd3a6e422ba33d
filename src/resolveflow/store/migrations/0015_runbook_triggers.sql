-- Refine (issue 14): a runbook's declared trigger phrases (front matter ``triggers``), kept with
-- the runbook so that refine can attach it when a ticket contains one. Empty for every other
-- document.
ALTER TABLE documents ADD COLUMN runbook_triggers text[] NOT NULL DEFAULT '{}';
