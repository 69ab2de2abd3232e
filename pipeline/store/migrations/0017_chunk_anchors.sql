-- Deep links: each chunk's nearest anchor above its text (an HTML id or <a name>, an AsciiDoc [[id]], a
-- Confluence heading's id; pipeline.records.Chunk.anchor), so a hit or citation links to uri#anchor.
-- NULL: none known, or a chunk stored before anchors were kept; the next ingest re-chunks it (the
-- parser version in the chunker fingerprint changed with this), its vector reused by text hash.
ALTER TABLE staged_chunks ADD COLUMN IF NOT EXISTS anchor text;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS anchor text;

-- A source's page furniture (pipeline.parse.furniture): the keys of blocks repeated across its pages,
-- found when an ingest parses enough of them together and used when it parses a few.
CREATE TABLE IF NOT EXISTS furniture (
    source text PRIMARY KEY,
    keys   jsonb NOT NULL,
    pages  integer NOT NULL,
    at     timestamptz NOT NULL DEFAULT now()
);
