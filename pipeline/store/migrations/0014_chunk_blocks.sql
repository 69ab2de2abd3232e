-- Each chunk's typed blocks (pipeline.records.Block, in its packed form: one JSON array per block,
-- [kind, start, end, header, cells, code, lang], offsets into the chunk's text), so readers never
-- re-parse text. NULL: a chunk stored before blocks were kept; the next ingest re-chunks it (the
-- chunker version changed with this) and fills them in, its vector reused by text hash.
ALTER TABLE staged_chunks ADD COLUMN IF NOT EXISTS blocks jsonb;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS blocks jsonb;
