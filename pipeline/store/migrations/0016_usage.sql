-- Usage records (pipeline.usage): one row per ask and per search, written off the request path.
-- What `docforge gaps` reads; pruned past usage.retention_days by the nightly schedule. No secret is
-- kept, and only what the caller could read: the documents are those its answer or search returned.
CREATE TABLE IF NOT EXISTS usage_events (
    id           bigserial PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    kind         text NOT NULL CHECK (kind IN ('ask', 'search')),
    surface      text NOT NULL,        -- api | mcp | cli | python
    question     text,                 -- NULL when usage.store_question is off
    question_sha text NOT NULL,        -- sha256 of the question as asked
    principal    text NOT NULL,        -- the caller's name, or 'sha256:<hex>' when usage.store_principal is off
    mode         text NOT NULL,        -- dense | keyword | hybrid
    abstained    boolean,              -- asks only
    confidence   real,                 -- asks only
    label        text,                 -- asks: STRICT | HYBRID | UNGROUNDED
    doc_keys     text[] NOT NULL DEFAULT '{}',  -- asks: the documents cited; searches: the top hits' documents
    scores       real[] NOT NULL DEFAULT '{}',  -- searches: the top hits' scores, best first
    latency_ms   real NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_events_at ON usage_events (at);
