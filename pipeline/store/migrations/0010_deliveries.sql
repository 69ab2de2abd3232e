-- Webhook deliveries (pipeline.store.deliveries): one row per delivery and source it maps to.
-- The API records a verified delivery; the push sensor turns pending rows into run requests.
CREATE TABLE IF NOT EXISTS deliveries (
    seq          bigserial,
    delivery_id  text NOT NULL,        -- '<host>:<the host''s delivery id>', or 'sha256:<body hash>' without one
    source       text NOT NULL,
    host         text NOT NULL,        -- github | gitlab | gitea | forgejo | confluence
    body_sha256  text NOT NULL,        -- a replayed body is refused even under another delivery id
    ref          text,                 -- git: the pushed ref
    commit       text,                 -- git: the commit pushed
    pages        text[],               -- Confluence: the page ids to refresh; NULL: the whole source
    received_at  timestamptz NOT NULL DEFAULT now(),
    consumed_at  timestamptz,          -- when the sensor requested its run
    run_key      text,                 -- that run's key
    PRIMARY KEY (delivery_id, source)
);
CREATE UNIQUE INDEX IF NOT EXISTS deliveries_body ON deliveries (body_sha256, source);
CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (seq) WHERE consumed_at IS NULL;
