-- Answers of `docforge ask` (pipeline.answers): the answer cache and each answer's provenance.
-- `cache_key` is the sha256 of everything the answer depends on (pipeline/answers/cache.py), so a
-- lookup is one index probe; several rows may share a key (a `--no-cache` ask records a fresh one),
-- the newest wins. `stages` is the hash chain (pipeline/answers/provenance.py) and `dag_root` its root.
CREATE TABLE IF NOT EXISTS answers (
    id          text PRIMARY KEY,
    cache_key   text NOT NULL,
    question    text NOT NULL,
    model       text NOT NULL,
    audit_mode  text NOT NULL,
    dag_root    text NOT NULL,
    answer      jsonb NOT NULL,           -- the answer as returned (without per-request fields)
    stages      jsonb NOT NULL,           -- [{stage, hash, payload}], question → … → label
    created_at  timestamptz NOT NULL DEFAULT now(),
    hits        int NOT NULL DEFAULT 0,
    last_hit_at timestamptz
);
CREATE INDEX IF NOT EXISTS answers_cache_key ON answers (cache_key, created_at DESC);
