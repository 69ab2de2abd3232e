-- docforge schema v1. {dim} is the embedding model's dimension, fixed per store.
CREATE EXTENSION IF NOT EXISTS vector;

-- One row per indexed document (a file in a repo, a Confluence page).
CREATE TABLE sources (
    key             text PRIMARY KEY,          -- "<source name>:<path or page id>", stable
    partition       text NOT NULL,             -- the sources.yml name = Dagster partition
    type            text NOT NULL,             -- git | confluence
    uri             text NOT NULL,             -- path in the repo, or page id
    url             text NOT NULL,
    title           text NOT NULL,
    tags            text[] NOT NULL DEFAULT '{}',
    meta            jsonb NOT NULL DEFAULT '{}',  -- repo, commit, space, labels, breadcrumb, version ...
    content_hash    text NOT NULL,
    version         text,                      -- git blob id / Confluence version number
    mtime_ns        bigint,
    last_crawled_at timestamptz NOT NULL DEFAULT now(),
    status          text NOT NULL DEFAULT 'indexed'
);
CREATE INDEX sources_partition ON sources (partition);

-- One row per embedded chunk. id = sha256(source key, ordinal, text hash).
CREATE TABLE chunks (
    id           text PRIMARY KEY,
    source_key   text NOT NULL REFERENCES sources (key) ON DELETE CASCADE,
    ordinal      int NOT NULL,
    heading_path text[] NOT NULL,
    section      text NOT NULL,                -- heading path joined with ' > '
    text         text NOT NULL,
    token_count  int NOT NULL,                 -- of the embedded text, special tokens included
    text_hash    text NOT NULL,                -- sha256 of the embedded text (title + path + text)
    model        text NOT NULL,
    embedding    vector({dim}) NOT NULL,
    tsv          tsvector GENERATED ALWAYS AS (
                     setweight(to_tsvector('english', section), 'A') || to_tsvector('english', text)) STORED
);
CREATE INDEX chunks_source ON chunks (source_key, ordinal);
CREATE INDEX chunks_text_hash ON chunks (text_hash);
CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);

-- The incremental ledger: what was indexed, by which chunker and model.
-- A row is written in the same transaction as the chunks it describes, never before.
CREATE TABLE ledger (
    source_key   text PRIMARY KEY,
    partition    text NOT NULL,
    mtime_ns     bigint,
    size         bigint,
    version      text,
    content_hash text NOT NULL,
    chunker      text NOT NULL,
    model        text NOT NULL,
    chunk_count  int NOT NULL,
    run_id       text,
    indexed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_partition ON ledger (partition);

-- Work in progress between stages (documents → chunks → embeddings), so each
-- stage is resumable: a crash leaves rows here, never half-written index rows.
CREATE TABLE staged_documents (
    source_key   text PRIMARY KEY,
    partition    text NOT NULL,
    action       text NOT NULL CHECK (action IN ('upsert', 'delete')),
    type         text,
    kind         text,
    uri          text,
    url          text,
    title        text,
    tags         text[],
    meta         jsonb,
    content      text,
    content_hash text,
    version      text,
    mtime_ns     bigint,
    size         bigint,
    chunked      boolean NOT NULL DEFAULT false,
    run_id       text,
    staged_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX staged_documents_partition ON staged_documents (partition);

CREATE TABLE staged_chunks (
    source_key   text NOT NULL REFERENCES staged_documents (source_key) ON DELETE CASCADE,
    ordinal      int NOT NULL,
    id           text NOT NULL,
    heading_path text[] NOT NULL,
    text         text NOT NULL,
    embed_text   text NOT NULL,
    token_count  int NOT NULL,
    text_hash    text NOT NULL,
    embedding    vector({dim}),
    PRIMARY KEY (source_key, ordinal)
);
CREATE INDEX staged_chunks_text_hash ON staged_chunks (text_hash);

-- Documents that failed in the latest run of their partition.
CREATE TABLE failures (
    partition  text NOT NULL,
    source_key text NOT NULL,
    stage      text NOT NULL,
    error      text NOT NULL,
    run_id     text,
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition, source_key)
);
