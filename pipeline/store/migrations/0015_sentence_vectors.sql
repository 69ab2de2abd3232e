-- Vectors of the lines an extractive answer weighs (pipeline/answers/vectors.py), by (model, text hash):
-- computed once, so a repeated or similar question costs a lookup instead of embedding ~60 lines again.
-- float32 little-endian bytes (any model's width); rows are never updated, only added or purged.
CREATE TABLE IF NOT EXISTS sentence_vectors (
    model      text NOT NULL,
    text_hash  bytea NOT NULL,            -- sha256 of the line's text, 32 bytes
    vector     bytea NOT NULL,
    PRIMARY KEY (model, text_hash)
);
