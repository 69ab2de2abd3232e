-- One word per concept. A "source" is an entry of sources.yml (its name is also
-- the orchestrator's partition key, a word the store no longer uses); a
-- "document" is one file or page of a source. Renamed in place, so an existing
-- store keeps its rows, vectors and postings:
--   table sources → documents (it holds documents), its column partition → source;
--   source_key → doc_key and partition → source in every other table;
--   the indexes and constraints named after them (constraints by a loop: Postgres 18
--   also names NOT NULL constraints, older servers do not).
-- The trigger functions of migrations 0002 and 0003 name only chunks.seq,
-- chunks.tsv and the bm25_* tables, none of which change, so their bodies
-- (text, resolved when they run) need no rewrite.
ALTER TABLE sources RENAME TO documents;
ALTER TABLE documents RENAME COLUMN partition TO source;
ALTER INDEX sources_partition RENAME TO documents_source;

ALTER TABLE chunks RENAME COLUMN source_key TO doc_key;
ALTER INDEX chunks_source RENAME TO chunks_doc_key;

ALTER TABLE ledger RENAME COLUMN source_key TO doc_key;
ALTER TABLE ledger RENAME COLUMN partition TO source;
ALTER INDEX ledger_partition RENAME TO ledger_source;

ALTER TABLE staged_documents RENAME COLUMN source_key TO doc_key;
ALTER TABLE staged_documents RENAME COLUMN partition TO source;
ALTER INDEX staged_documents_partition RENAME TO staged_documents_source;

ALTER TABLE staged_chunks RENAME COLUMN source_key TO doc_key;

ALTER TABLE failures RENAME COLUMN partition TO source;
ALTER TABLE failures RENAME COLUMN source_key TO doc_key;

DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT conrelid::regclass AS tbl, conname FROM pg_constraint
             WHERE conrelid = ANY ('{documents, chunks, ledger, staged_documents, staged_chunks, failures}'::regclass[])
               AND (conname LIKE 'sources\_%' OR conname LIKE '%source\_key%' OR conname LIKE '%partition%')
    LOOP
        EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.tbl, r.conname,
                       replace(replace(regexp_replace(r.conname, '^sources_', 'documents_'),
                                       'source_key', 'doc_key'), 'partition', 'source'));
    END LOOP;
END $$;
