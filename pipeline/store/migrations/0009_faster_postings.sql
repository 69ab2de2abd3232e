-- Faster keyword reads, the same scores (migration 0008's lists, measured at 100k chunks).
--
-- 1. The list order's weight in float8 arithmetic. 0008's function computed it in
-- numeric (1.2 * ... / 100.0 are numeric literals) and a query sorts the last block
-- it reads of each term by it: ~3x the time of float8 per posting. Operation for
-- operation as pipeline.store.bm25.impact, so both give the same bits (a test
-- compares them). Weights move by at most an ulp, which can reorder only postings
-- whose weights agree to 1e-16; the block keys are weights, so the blocks are
-- rebuilt from bm25_docs below (a cold merge: ~20 s per 100k chunks on 2 cores).
CREATE OR REPLACE FUNCTION docforge_bm25_impact(tf int, dl int) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT tf::float8 / (tf + 1.2::float8 * (0.25::float8 + 0.75::float8 * dl / 100::float8)) $$;

-- 2. docforge_bm25_top returns each term's place in the query's array (term_no)
-- rather than its id: the caller reads the term's IDF from its own array, not a
-- join back to the terms.
DROP FUNCTION docforge_bm25_top(int[], int);
CREATE OR REPLACE FUNCTION docforge_bm25_top(term_ids int[], k int)
RETURNS TABLE (term_no int, seq int, tf int, dl int)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
WITH RECURSIVE blocks AS (
    SELECT t.no::int AS term_no, t.id AS term_id, b.imp, b.nseq, 0 AS above, b.postings
    FROM unnest(term_ids) WITH ORDINALITY t(id, no) CROSS JOIN LATERAL (
        SELECT x.imp, x.nseq, x.postings FROM bm25_blocks x WHERE x.term_id = t.id
        ORDER BY x.imp DESC, x.nseq DESC LIMIT 1) b
    UNION ALL
    SELECT b.term_no, b.term_id, n.imp, n.nseq, b.above + cardinality(b.postings), n.postings
    FROM blocks b CROSS JOIN LATERAL (
        SELECT x.imp, x.nseq, x.postings FROM bm25_blocks x WHERE x.term_id = b.term_id AND (x.imp, x.nseq) < (b.imp, b.nseq)
        ORDER BY x.imp DESC, x.nseq DESC LIMIT 1) n
    WHERE b.above + cardinality(b.postings) < k)
SELECT term_no, docforge_bm25_seq(x), docforge_bm25_tf(x), docforge_bm25_dl(x) FROM (
    SELECT b.term_no, unnest(b.postings) AS x FROM blocks b  -- in the select list: streamed
    WHERE b.above + cardinality(b.postings) <= k
    UNION ALL
    SELECT b.term_no, l.x FROM blocks b CROSS JOIN LATERAL (
        SELECT u.x FROM unnest(b.postings) u(x)
        ORDER BY docforge_bm25_impact(docforge_bm25_tf(u.x), docforge_bm25_dl(u.x)) DESC, docforge_bm25_seq(u.x)
        LIMIT k - b.above) l
    WHERE b.above + cardinality(b.postings) > k) u
$$;

-- 3. Removal deletes a block only when it is really left empty (0008 compared
-- counts, which assumed every removed posting was found in its block).
CREATE OR REPLACE FUNCTION docforge_bm25_remove(chunk_seqs bigint[]) RETURNS void
LANGUAGE plpgsql SET work_mem = '64MB' AS $$
DECLARE
    empty_terms int[];
    empty_imps float8[];
    empty_nseqs int[];
BEGIN
    WITH gone AS (
        DELETE FROM bm25_docs d WHERE d.seq = ANY (chunk_seqs) RETURNING d.*),
    losses AS (
        SELECT p.term_id, b.imp, b.nseq, array_agg(p.x) AS xs FROM (
            SELECT u.term_id, d.seq::int AS seq, docforge_bm25_posting(d.seq, u.tf, d.dl) AS x,
                   docforge_bm25_impact(u.tf, d.dl) AS imp
            FROM gone d, unnest(d.terms, d.tfs) u(term_id, tf)) p
        CROSS JOIN LATERAL (
            SELECT b.imp, b.nseq FROM bm25_blocks b WHERE b.term_id = p.term_id AND (b.imp, b.nseq) <= (p.imp, -p.seq)
            ORDER BY b.imp DESC, b.nseq DESC LIMIT 1) b
        GROUP BY 1, 2, 3),
    shrunk AS (
        UPDATE bm25_blocks b SET postings = docforge_bm25_without(b.postings, l.xs) FROM losses l
        WHERE b.term_id = l.term_id AND b.imp = l.imp AND b.nseq = l.nseq
        RETURNING b.term_id, b.imp, b.nseq, cardinality(b.postings) AS n)
    SELECT array_agg(term_id), array_agg(imp), array_agg(nseq) INTO empty_terms, empty_imps, empty_nseqs
    FROM shrunk WHERE n = 0;
    DELETE FROM bm25_blocks b USING unnest(empty_terms, empty_imps, empty_nseqs) e(term_id, imp, nseq)
    WHERE b.term_id = e.term_id AND b.imp = e.imp AND b.nseq = e.nseq;
END $$;

TRUNCATE bm25_blocks;
SELECT docforge_bm25_merge(ARRAY(SELECT seq FROM bm25_docs));
ANALYZE bm25_blocks;
