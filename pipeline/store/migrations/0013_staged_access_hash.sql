-- The access fingerprint of a staged document (pipeline.access.fingerprint), recorded into
-- ledger.access_hash when the document is swapped in (issue 27; docs/security.md).
ALTER TABLE staged_documents ADD COLUMN IF NOT EXISTS access_hash text;
