-- The page a chunk is on, for documents with pages (PDF): hits and citations name it.
-- NULL for everything else, and for chunks indexed before this migration (a PDF was
-- not indexed then). Nullable columns without defaults: no table rewrite.
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS page int;
ALTER TABLE staged_chunks ADD COLUMN IF NOT EXISTS page int;
