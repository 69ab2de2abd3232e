-- A smaller index: half-precision live vectors, and compact keyword postings.
--
-- 1. Vectors. The live generation's vectors become halfvec (2 bytes a dimension, not
-- 4), table and HNSW index both: recall@10 on real vectors moves by less than the
-- graph's own randomness (docs/performance.md). pipeline.store.generations.vector_type
-- makes every new generation halfvec; this converts the live one an older store has.
-- The index is rebuilt with the parameters it had.
DO $$
DECLARE
    g record;
    opts text;
BEGIN
    FOR g IN SELECT id, dimension FROM generations WHERE state = 'live' AND vector_type = 'vector' LOOP
        SELECT array_to_string(c.reloptions, ', ') INTO opts FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
        JOIN pg_am a ON a.oid = c.relam WHERE x.indrelid = format('vectors_%s', g.id)::regclass AND a.amname = 'hnsw';
        EXECUTE format('DROP INDEX IF EXISTS %I', format('vectors_%s_hnsw', g.id));
        EXECUTE format('ALTER TABLE %I ALTER COLUMN embedding TYPE halfvec(%s)', format('vectors_%s', g.id), g.dimension);
        SET LOCAL maintenance_work_mem = '512MB';
        EXECUTE format('CREATE INDEX %I ON %I USING hnsw (embedding halfvec_cosine_ops) WITH (%s)',
                       format('vectors_%s_hnsw', g.id), format('vectors_%s', g.id),
                       coalesce(opts, 'm = 16, ef_construction = 64'));
        UPDATE generations SET vector_type = 'halfvec' WHERE id = g.id;
    END LOOP;
END $$;

-- 2. Keyword postings. Migration 0003 kept one row per (term, chunk) and two btree
-- indexes over them: ~140 bytes a posting, 687 MB per 100k chunks, more than the
-- chunks themselves. The same information now lives in two packed tables:
--
--   bm25_blocks  each term's posting list in impact order (best first), cut into
--                ranges of at most 128 postings, one row each: an int8 array, one
--                element a posting (chunk seq, tf and chunk length packed:
--                docforge_bm25_posting), in no order inside. A block is keyed by a
--                lower bound of its range (its lowest posting when it was cut): a
--                posting belongs to the block with the greatest key at or below its
--                own, so one index probe finds it, to add or to remove. A query
--                reads a term's blocks from the top until they hold `per_term`
--                postings and sorts only the last one (docforge_bm25_top).
--   bm25_docs    per chunk: its length and its terms with their frequencies (sorted
--                term ids, parallel tf array): exact scores for the chosen candidates
--                (one probe per chunk, not one per chunk and term), and where a
--                deleted chunk's postings are.
--
-- List order is (imp DESC, seq ASC), imp = docforge_bm25_impact(tf, dl): the
-- expression (and type) of 0003's index, so searches read the postings they read
-- before (0003 broke ties by heap position, in practice seq order). `bm25_postings`
-- becomes a view of the blocks, one row per posting as before. Triggers keep it all
-- exact, as 0003's did; they still run after 0002's (chunks_bm25_* < chunks_postings_*:
-- name order), whose stats-row lock serialises writers.

-- BM25 term weight with k1 1.2, b 0.75 and a nominal chunk length of 100: the list
-- order. Constants as in pipeline/store/bm25.py (a test compares them).
CREATE OR REPLACE FUNCTION docforge_bm25_impact(tf int, dl int) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT tf::real / (tf + 1.2 * (0.25 + 0.75 * dl / 100.0)) $$;

-- A posting in 8 bytes: seq (31 bits; past 2^31 the int cast fails, loudly), tf - 1
-- (8 bits: a tsvector keeps at most 256 positions of a lexeme) and the chunk's length
-- (24 bits: a tsvector is under 1 MB, 2 bytes a position).
CREATE OR REPLACE FUNCTION docforge_bm25_posting(seq bigint, tf int, dl int) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT (seq::int::bigint << 32) | ((tf - 1)::bigint << 24) | dl $$;
CREATE OR REPLACE FUNCTION docforge_bm25_seq(posting bigint) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT (posting >> 32)::int $$;
CREATE OR REPLACE FUNCTION docforge_bm25_tf(posting bigint) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ((posting >> 24) & 255)::int + 1 $$;
CREATE OR REPLACE FUNCTION docforge_bm25_dl(posting bigint) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT (posting & 16777215)::int $$;

CREATE TABLE bm25_docs (
    seq   bigint PRIMARY KEY,       -- chunks.seq
    dl    int NOT NULL,             -- the chunk's length in lexeme occurrences
    terms int[] NOT NULL,           -- bm25_terms.id, ascending
    tfs   smallint[] NOT NULL       -- occurrences of each
);

CREATE TABLE bm25_blocks (
    term_id  int NOT NULL,          -- bm25_terms.id
    imp      float8 NOT NULL,       -- the key: the block's last posting's impact ...
    nseq     int NOT NULL,          -- ... and its seq, negated (list order is seq ascending within an impact)
    postings bigint[] NOT NULL      -- docforge_bm25_posting values, in list order
);
CREATE INDEX bm25_blocks_list ON bm25_blocks (term_id, imp, nseq);

-- The postings of bm25_docs rows `chunk_seqs`, merged into the blocks. A posting
-- goes to its block (below every block: the last one, whose key it becomes) and is
-- appended there: a block is a range of its list, in no order inside, so adding a
-- posting copies one array in C rather than re-sorting a block. A block that would
-- pass 128 is sorted and split in even parts; so are the postings of terms without
-- blocks (all of them in a cold load), which skip the probes.
CREATE OR REPLACE FUNCTION docforge_bm25_merge(chunk_seqs bigint[]) RETURNS void
LANGUAGE sql SET work_mem = '64MB' AS $$
WITH p AS MATERIALIZED (
    SELECT u.term_id, d.seq::int AS seq, docforge_bm25_posting(d.seq, u.tf, d.dl) AS x,
           docforge_bm25_impact(u.tf, d.dl) AS imp
    FROM bm25_docs d, unnest(d.terms, d.tfs) u(term_id, tf)
    WHERE d.seq = ANY (chunk_seqs)),
known AS MATERIALIZED (
    SELECT t.term_id FROM (SELECT DISTINCT term_id FROM p) t
    WHERE EXISTS (SELECT FROM bm25_blocks b WHERE b.term_id = t.term_id)),
placed AS MATERIALIZED (
    SELECT p.*, b.imp AS bimp, b.nseq AS bnseq FROM p JOIN known USING (term_id) CROSS JOIN LATERAL (
        (SELECT b.imp, b.nseq FROM bm25_blocks b WHERE b.term_id = p.term_id AND (b.imp, b.nseq) <= (p.imp, -p.seq)
         ORDER BY b.imp DESC, b.nseq DESC LIMIT 1)
        UNION ALL
        (SELECT b.imp, b.nseq FROM bm25_blocks b WHERE b.term_id = p.term_id ORDER BY b.imp, b.nseq LIMIT 1)
        LIMIT 1) b
    UNION ALL
    SELECT p.*, NULL, NULL FROM p WHERE p.term_id NOT IN (SELECT term_id FROM known)),
gains AS MATERIALIZED (  -- per block: the new postings, and the lowest of them
    SELECT g.*, n.n, n.xs, b.had FROM (
        SELECT DISTINCT ON (term_id, bimp, bnseq) term_id, bimp, bnseq, imp AS lo_imp, -seq AS lo_nseq
        FROM placed ORDER BY term_id, bimp, bnseq, imp, -seq) g
    JOIN (SELECT term_id, bimp, bnseq, count(*) AS n, array_agg(x) AS xs FROM placed
          WHERE bimp IS NOT NULL GROUP BY 1, 2, 3) n USING (term_id, bimp, bnseq)
    JOIN LATERAL (SELECT cardinality(b.postings) AS had FROM bm25_blocks b
                  WHERE b.term_id = g.term_id AND b.imp = g.bimp AND b.nseq = g.bnseq) b ON true),
appended AS (
    UPDATE bm25_blocks b SET postings = b.postings || g.xs,
        imp = CASE WHEN (g.lo_imp, g.lo_nseq) < (b.imp, b.nseq) THEN g.lo_imp ELSE b.imp END,
        nseq = CASE WHEN (g.lo_imp, g.lo_nseq) < (b.imp, b.nseq) THEN g.lo_nseq ELSE b.nseq END
    FROM gains g
    WHERE g.had + g.n <= 128 AND b.term_id = g.term_id AND b.imp = g.bimp AND b.nseq = g.bnseq),
split AS (  -- blocks that would pass 128: out, to be cut again with their new postings
    DELETE FROM bm25_blocks b USING gains g
    WHERE g.had + g.n > 128 AND b.term_id = g.term_id AND b.imp = g.bimp AND b.nseq = g.bnseq
    RETURNING b.*),
cut AS (
    SELECT term_id, x, imp, seq, bimp, bnseq FROM placed p
    WHERE bimp IS NULL OR EXISTS (SELECT FROM split s WHERE s.term_id = p.term_id AND s.imp = p.bimp AND s.nseq = p.bnseq)
    UNION ALL
    SELECT s.term_id, u.x, docforge_bm25_impact(docforge_bm25_tf(u.x), docforge_bm25_dl(u.x)), docforge_bm25_seq(u.x),
           s.imp, s.nseq
    FROM split s, unnest(s.postings) u(x)),
ranked AS (
    SELECT c.*, row_number() OVER w - 1 AS i, count(*) OVER (PARTITION BY term_id, bimp, bnseq) AS n
    FROM cut c WINDOW w AS (PARTITION BY term_id, bimp, bnseq ORDER BY imp DESC, seq))
INSERT INTO bm25_blocks (term_id, imp, nseq, postings)
SELECT term_id, docforge_bm25_impact(docforge_bm25_tf(last), docforge_bm25_dl(last)), -docforge_bm25_seq(last),
       postings
FROM (SELECT term_id, postings, postings[cardinality(postings)] AS last FROM (
          SELECT term_id, array_agg(x ORDER BY i) AS postings FROM ranked
          GROUP BY term_id, bimp, bnseq, i * ceil(n / 128.0)::bigint / n) a) b
$$;

-- `postings` without the values `gone` (a posting value is unique in its list).
CREATE OR REPLACE FUNCTION docforge_bm25_without(postings bigint[], gone bigint[]) RETURNS bigint[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    x bigint;
BEGIN
    FOREACH x IN ARRAY gone LOOP
        postings := array_remove(postings, x);
    END LOOP;
    RETURN postings;
END $$;

-- The postings of chunks `chunk_seqs`, taken out of their blocks (a block left empty
-- goes; a block keeps its key, still a bound of its range), and their bm25_docs rows.
CREATE OR REPLACE FUNCTION docforge_bm25_remove(chunk_seqs bigint[]) RETURNS void
LANGUAGE sql SET work_mem = '64MB' AS $$
WITH gone AS MATERIALIZED (
    DELETE FROM bm25_docs d WHERE d.seq = ANY (chunk_seqs) RETURNING d.*),
losses AS MATERIALIZED (
    SELECT p.term_id, b.imp, b.nseq, array_agg(p.x) AS xs FROM (
        SELECT u.term_id, d.seq::int AS seq, docforge_bm25_posting(d.seq, u.tf, d.dl) AS x,
               docforge_bm25_impact(u.tf, d.dl) AS imp
        FROM gone d, unnest(d.terms, d.tfs) u(term_id, tf)) p
    CROSS JOIN LATERAL (
        SELECT b.imp, b.nseq FROM bm25_blocks b WHERE b.term_id = p.term_id AND (b.imp, b.nseq) <= (p.imp, -p.seq)
        ORDER BY b.imp DESC, b.nseq DESC LIMIT 1) b
    GROUP BY 1, 2, 3),
emptied AS (
    DELETE FROM bm25_blocks b USING losses l
    WHERE b.term_id = l.term_id AND b.imp = l.imp AND b.nseq = l.nseq AND cardinality(b.postings) <= cardinality(l.xs))
UPDATE bm25_blocks b SET postings = docforge_bm25_without(b.postings, l.xs) FROM losses l
WHERE b.term_id = l.term_id AND b.imp = l.imp AND b.nseq = l.nseq AND cardinality(b.postings) > cardinality(l.xs)
$$;

-- The best k postings of each term of `term_ids`: each list's blocks, from the top,
-- until they hold k (one index probe a block, all terms at once); the last block read
-- is sorted for the rest. Plain SQL, so the planner inlines it into the query.
CREATE OR REPLACE FUNCTION docforge_bm25_top(term_ids int[], k int)
RETURNS TABLE (term_id int, seq int, tf int, dl int)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
WITH RECURSIVE blocks AS (
    SELECT t.id AS term_id, b.imp, b.nseq, 0 AS above, b.postings FROM unnest(term_ids) t(id) CROSS JOIN LATERAL (
        SELECT x.imp, x.nseq, x.postings FROM bm25_blocks x WHERE x.term_id = t.id
        ORDER BY x.imp DESC, x.nseq DESC LIMIT 1) b
    UNION ALL
    SELECT b.term_id, n.imp, n.nseq, b.above + cardinality(b.postings), n.postings FROM blocks b CROSS JOIN LATERAL (
        SELECT x.imp, x.nseq, x.postings FROM bm25_blocks x WHERE x.term_id = b.term_id AND (x.imp, x.nseq) < (b.imp, b.nseq)
        ORDER BY x.imp DESC, x.nseq DESC LIMIT 1) n
    WHERE b.above + cardinality(b.postings) < k)
SELECT term_id, docforge_bm25_seq(x), docforge_bm25_tf(x), docforge_bm25_dl(x) FROM (
    SELECT b.term_id, unnest(b.postings) AS x FROM blocks b  -- in the select list: streamed
    WHERE b.above + cardinality(b.postings) <= k
    UNION ALL
    SELECT b.term_id, l.x FROM blocks b CROSS JOIN LATERAL (
        SELECT u.x FROM unnest(b.postings) u(x)
        ORDER BY docforge_bm25_impact(docforge_bm25_tf(u.x), docforge_bm25_dl(u.x)) DESC, docforge_bm25_seq(u.x)
        LIMIT k - b.above) l
    WHERE b.above + cardinality(b.postings) > k) u
$$;

-- bm25_docs rows for chunks (seq, tsv); their terms are in bm25_terms already (0002's triggers ran first).
CREATE OR REPLACE FUNCTION docforge_bm25_docs(chunk_seqs bigint[], chunk_tsvs tsvector[]) RETURNS void
LANGUAGE sql SET work_mem = '64MB' AS $$
    WITH r AS MATERIALIZED (  -- each chunk's length once, not once per lexeme
        SELECT seq, tsv, docforge_tsv_length(tsv) AS dl FROM unnest(chunk_seqs, chunk_tsvs) x(seq, tsv))
    INSERT INTO bm25_docs (seq, dl, terms, tfs)
    SELECT r.seq, min(r.dl), array_agg(t.id ORDER BY t.id),
           array_agg(coalesce(array_length(u.positions, 1), 1)::smallint ORDER BY t.id)
    FROM r, unnest(r.tsv) u JOIN bm25_terms t ON t.term = u.lexeme
    GROUP BY r.seq
$$;

-- One trigger function for every change (transition tables are visible to it, not to what it calls).
CREATE OR REPLACE FUNCTION docforge_postings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    gone bigint[];
    added bigint[];
    tsvs tsvector[];
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NOT EXISTS (SELECT seq, tsv FROM old_rows EXCEPT ALL SELECT seq, tsv FROM new_rows) THEN
            RETURN NULL;  -- embeddings or other columns only: nothing BM25 sees
        END IF;
        SELECT array_agg(seq) INTO gone FROM old_rows;
        SELECT array_agg(seq), array_agg(tsv) INTO added, tsvs FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(seq) INTO gone FROM old_rows;
    ELSE
        SELECT array_agg(seq), array_agg(tsv) INTO added, tsvs FROM new_rows;
    END IF;
    IF gone IS NOT NULL THEN
        PERFORM docforge_bm25_remove(gone);
    END IF;
    IF added IS NOT NULL THEN
        PERFORM docforge_bm25_docs(added, tsvs);
        PERFORM docforge_bm25_merge(added);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION docforge_postings_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE bm25_blocks, bm25_docs;
    RETURN NULL;
END $$;

DROP TRIGGER chunks_postings_insert ON chunks;
DROP TRIGGER chunks_postings_delete ON chunks;
DROP TRIGGER chunks_postings_update ON chunks;
CREATE TRIGGER chunks_postings_insert AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION docforge_postings_changed();
CREATE TRIGGER chunks_postings_delete AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION docforge_postings_changed();
CREATE TRIGGER chunks_postings_update AFTER UPDATE ON chunks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION docforge_postings_changed();
DROP FUNCTION docforge_postings_inserted(), docforge_postings_deleted(), docforge_postings_updated(),
    docforge_postings_insert(bigint[], tsvector[]);

-- Backfill from 0003's postings (the same terms, tf and lengths), then drop them.
INSERT INTO bm25_docs (seq, dl, terms, tfs)
SELECT seq, min(dl), array_agg(term_id ORDER BY term_id), array_agg(tf::smallint ORDER BY term_id)
FROM bm25_postings GROUP BY seq;
DROP TABLE bm25_postings;
SELECT docforge_bm25_merge(ARRAY(SELECT seq FROM bm25_docs));

-- The GIN index of chunks.tsv served keyword search before 0003's postings; nothing
-- reads it since (a filter that keeps few chunks tests their tsvectors one by one),
-- and every chunk written paid for it.
DROP INDEX IF EXISTS chunks_tsv;

CREATE VIEW bm25_postings AS  -- one row per posting, as migration 0003's table had them
SELECT b.term_id, docforge_bm25_seq(u.x)::bigint AS seq, docforge_bm25_tf(u.x) AS tf, docforge_bm25_dl(u.x) AS dl
FROM bm25_blocks b, unnest(b.postings) u(x);
ANALYZE bm25_docs, bm25_blocks;
