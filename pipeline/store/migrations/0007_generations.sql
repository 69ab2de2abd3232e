-- Model generations (docs/generations.md). A store's vectors no longer live in
-- `chunks.embedding`, one model per store for ever: each generation (a model at a
-- dimension) has a table of its own, `vectors_<id>` (chunk seq → vector), with its
-- own HNSW index, and exactly one generation is live. `docforge reindex` builds the
-- next generation beside the live one from the chunk texts already stored, then
-- one transaction flips `state`; search reads the live one's table only, so it
-- never mixes models, and the old table is dropped afterwards.
--
-- An existing store upgrades in place: its vectors become generation 1 (the model
-- and dimension docforge_meta records), its HNSW index is rebuilt on the new table.
-- A new store gets its generation 1 from pipeline.store.schema, which knows the model
-- (and whether it is wider than pgvector's 2,000-dimension `vector` index: halfvec).
CREATE TABLE generations (
    id          int PRIMARY KEY,
    model       text NOT NULL,              -- the model's id (sentence-transformers/all-MiniLM-L6-v2, a folder name)
    name        text NOT NULL,              -- as configured when built (a hub id or a local path): how to load it
    dimension   int NOT NULL CHECK (dimension BETWEEN 1 AND 4000),
    vector_type text NOT NULL CHECK (vector_type IN ('vector', 'halfvec')),  -- halfvec above 2,000
    state       text NOT NULL CHECK (state IN ('building', 'live', 'retired', 'dropped')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    live_at     timestamptz,
    retired_at  timestamptz
);
-- At most one live and one building generation.
CREATE UNIQUE INDEX generations_live ON generations (state) WHERE state = 'live';
CREATE UNIQUE INDEX generations_building ON generations (state) WHERE state = 'building';

-- Documents with a chunk longer than a building generation's model reads (its tokenizer's count,
-- as the reindex embedded it): the switch leaves their ledger rows be, so the next ingest re-chunks
-- them for the new model, and rewrites the others' (their chunks fit: nothing to re-parse).
CREATE TABLE generation_overflow (
    generation int NOT NULL,
    doc_key    text NOT NULL,
    PRIMARY KEY (generation, doc_key)
);

-- What a chunk's embedded text adds before its text (title and heading path, see
-- pipeline/chunk.py): a reindex embeds prefix || text again without re-parsing.
-- NULL for chunks indexed before this migration (a reindex rebuilds it, checked
-- against text_hash). Nullable, no default: no table rewrite.
ALTER TABLE chunks ADD COLUMN embed_prefix text;

DO $$
DECLARE
    built text := (SELECT value FROM docforge_meta WHERE key = 'model');
    dim int := (SELECT atttypmod FROM pg_attribute
                WHERE attrelid = 'chunks'::regclass AND attname = 'embedding' AND NOT attisdropped);
BEGIN
    IF built IS NOT NULL THEN  -- an existing store: its vectors become generation 1
        INSERT INTO generations (id, model, name, dimension, vector_type, state, live_at)
        VALUES (1, built, built, dim, 'vector', 'live', now());
        EXECUTE format('CREATE TABLE vectors_1 (seq bigint PRIMARY KEY REFERENCES chunks (seq) ON DELETE CASCADE, '
                       'embedding vector(%s) NOT NULL)', dim);
        INSERT INTO vectors_1 (seq, embedding) SELECT seq, embedding FROM chunks WHERE embedding IS NOT NULL;
        SET LOCAL maintenance_work_mem = '512MB';
        CREATE INDEX vectors_1_hnsw ON vectors_1 USING hnsw (embedding vector_cosine_ops)
            WITH (m = 16, ef_construction = 64);
    END IF;
END $$;

-- The index and the column they came from (its HNSW index goes with it).
ALTER TABLE chunks DROP COLUMN embedding, DROP COLUMN model;

-- Staged vectors are the ingest's generation's, of any width: a vector without a fixed dimension,
-- tagged with the generation it was made for (one made for a generation no longer live is redone).
ALTER TABLE staged_chunks ALTER COLUMN embedding TYPE vector;
ALTER TABLE staged_chunks ADD COLUMN generation int;
UPDATE staged_chunks SET generation = 1 WHERE embedding IS NOT NULL;
