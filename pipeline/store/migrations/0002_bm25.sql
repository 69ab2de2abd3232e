-- BM25 term statistics for keyword search, kept exact by triggers on `chunks`,
-- so ingest code needs no change. Here live the corpus-wide numbers BM25
-- needs: chunk count, total length, and per-term document frequency (per-chunk
-- term frequency and length: migration 0003's postings). Every trigger updates the single `bm25_stats` row first: that row
-- lock serialises writers, so concurrent ingests never deadlock on term rows.
DROP TABLE IF EXISTS bm25_terms, bm25_stats;  -- left over by a reset: rebuilt below
CREATE TABLE bm25_stats (
    id        int PRIMARY KEY CHECK (id = 1),
    n         bigint NOT NULL,              -- chunks
    total_len bigint NOT NULL               -- sum of chunk lengths, in lexeme occurrences
);
CREATE TABLE bm25_terms (
    term text PRIMARY KEY,                  -- an 'english' lexeme as stored in chunks.tsv
    df   int NOT NULL                       -- chunks containing it
);

-- Length of a tsvector in occurrences (a stripped lexeme counts once).
CREATE OR REPLACE FUNCTION docforge_tsv_length(tsvector) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0) FROM unnest($1) $$;

-- The statements below run inside each trigger, over its transition table(s)
-- (`new_rows` / `old_rows`, visible only there). Stats row first, then terms in
-- lexeme order: the lock order every writer shares.
CREATE OR REPLACE FUNCTION docforge_bm25_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE bm25_stats st SET n = st.n + d.n, total_len = st.total_len + d.len
    FROM (SELECT count(*) AS n, coalesce(sum(docforge_tsv_length(tsv)), 0) AS len FROM new_rows) d
    WHERE st.id = 1 AND d.n > 0;
    INSERT INTO bm25_terms AS t (term, df)
    SELECT u.lexeme, count(*) FROM new_rows r, unnest(r.tsv) u GROUP BY u.lexeme ORDER BY u.lexeme
    ON CONFLICT (term) DO UPDATE SET df = t.df + excluded.df;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION docforge_bm25_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE bm25_stats st SET n = st.n - d.n, total_len = st.total_len - d.len
    FROM (SELECT count(*) AS n, coalesce(sum(docforge_tsv_length(tsv)), 0) AS len FROM old_rows) d
    WHERE st.id = 1 AND d.n > 0;
    UPDATE bm25_terms t SET df = t.df - d.df
    FROM (SELECT u.lexeme, count(*) AS df FROM old_rows r, unnest(r.tsv) u GROUP BY u.lexeme ORDER BY u.lexeme) d
    WHERE t.term = d.lexeme;
    DELETE FROM bm25_terms t USING (SELECT DISTINCT u.lexeme FROM old_rows r, unnest(r.tsv) u) d
    WHERE t.term = d.lexeme AND t.df <= 0;
    RETURN NULL;
END $$;

-- An UPDATE that changes text or section changes tsv: drop the old rows' terms, add the new ones'.
CREATE OR REPLACE FUNCTION docforge_bm25_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT tsv FROM old_rows EXCEPT ALL SELECT tsv FROM new_rows) THEN
        RETURN NULL;  -- embeddings or other columns only: nothing BM25 sees
    END IF;
    UPDATE bm25_stats SET total_len = total_len
        - (SELECT coalesce(sum(docforge_tsv_length(tsv)), 0) FROM old_rows)
        + (SELECT coalesce(sum(docforge_tsv_length(tsv)), 0) FROM new_rows) WHERE id = 1;
    INSERT INTO bm25_terms AS t (term, df)
    SELECT lexeme, sum(df) FROM (
        SELECT u.lexeme, -1 AS df FROM old_rows r, unnest(r.tsv) u
        UNION ALL SELECT u.lexeme, 1 FROM new_rows r, unnest(r.tsv) u) x
    GROUP BY lexeme HAVING sum(df) <> 0 ORDER BY lexeme
    ON CONFLICT (term) DO UPDATE SET df = t.df + excluded.df;
    DELETE FROM bm25_terms t USING (SELECT DISTINCT u.lexeme FROM old_rows r, unnest(r.tsv) u) d
    WHERE t.term = d.lexeme AND t.df <= 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION docforge_bm25_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE bm25_stats SET n = 0, total_len = 0 WHERE id = 1;
    DELETE FROM bm25_terms;
    RETURN NULL;
END $$;

CREATE TRIGGER chunks_bm25_insert AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION docforge_bm25_inserted();
CREATE TRIGGER chunks_bm25_delete AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION docforge_bm25_deleted();
CREATE TRIGGER chunks_bm25_update AFTER UPDATE ON chunks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION docforge_bm25_updated();
CREATE TRIGGER chunks_bm25_truncate AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION docforge_bm25_truncated();

-- Backfill from whatever a store already holds.
INSERT INTO bm25_stats SELECT 1, count(*), coalesce(sum(docforge_tsv_length(tsv)), 0) FROM chunks;
INSERT INTO bm25_terms SELECT u.lexeme, count(*) FROM chunks c, unnest(c.tsv) u GROUP BY u.lexeme;
