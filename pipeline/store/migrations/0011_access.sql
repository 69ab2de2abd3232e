-- Who may read a document (issue 27; docs/security.md). NULL: everyone, as before.
-- Otherwise a JSON array of clauses, each a JSON array of principals, "user:<email or account id>"
-- or "group:<name>": a reader must match at least one principal of every clause. A source's
-- `access:` is one clause; a synced Confluence page adds its space's and each restricted
-- ancestor's (Confluence requires all of them). An empty clause admits only full-access callers.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS access jsonb;
ALTER TABLE staged_documents ADD COLUMN IF NOT EXISTS access jsonb;
-- The ledger's access fingerprint: a permission change without a content change is applied by
-- an UPDATE of documents.access, never a re-embed.
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS access_hash text;

-- May a caller holding `principals` read a document with `access`? Used inside every statement
-- that reads documents or chunks, in the WHERE that ranks (never after it).
CREATE OR REPLACE FUNCTION docforge_may_read(access jsonb, principals text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT access IS NULL OR NOT EXISTS (
        SELECT FROM jsonb_array_elements(access) AS clause
        WHERE NOT (ARRAY(SELECT jsonb_array_elements_text(clause)) && principals))
$$;
