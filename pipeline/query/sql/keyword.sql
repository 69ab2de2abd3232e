-- The keyword leg: Okapi BM25 (Lucene's IDF), the {k} best chunks that pass the filter, best first.
-- Placeholders (pipeline.query.statements): {filter} the compiled filter over `c` and `doc` (TRUE
-- without one), ANDed with the caller's access condition (pipeline.access; none for full access);
-- {access} that condition alone, over an access list (`doc`, a bm25_access row), and {restricted}
-- whether there is one; {per_term}, {pool}, {k} literals, so that a cached plan still knows them.
--
-- The statistics (N, average length, document frequencies) are the whole index's for full access,
-- and for a restricted caller only those of the access lists it may read (migration 0018): a word
-- in a hidden document moves no score of what the caller sees. A term none of them holds reads no
-- postings (its id is NULL).
WITH st AS (
    SELECT n::float8 AS n, total_len::float8 / greatest(n, 1) AS avgdl FROM bm25_stats WHERE NOT {restricted}
    UNION ALL
    SELECT coalesce(sum(doc.n), 0)::float8, coalesce(sum(doc.total_len), 0)::float8 / greatest(sum(doc.n), 1)
    FROM bm25_access doc WHERE {restricted} AND {access}
),
terms AS (  -- the query's lexemes, their ids, document frequencies and IDF
    SELECT t.term, CASE WHEN f.df > 0 THEN b.id END AS id, f.df,
           ln(1 + (st.n - f.df + 0.5) / (f.df + 0.5)) AS idf,
           st.avgdl
    FROM (SELECT * FROM st LIMIT 1) st
    CROSS JOIN unnest(tsvector_to_array(to_tsvector('english', %(q)s))) t(term)
    LEFT JOIN bm25_terms b ON b.term = t.term
    CROSS JOIN LATERAL (
        SELECT CASE WHEN {restricted} THEN (
                   SELECT coalesce(sum(a.df), 0) FROM bm25_access_terms a JOIN bm25_access doc ON doc.id = a.access_id
                   WHERE a.term = t.term AND {access})
               ELSE coalesce(b.df, 0) END AS df) f
),
-- The best {per_term} postings of each term (impact order, migrations 0008 and 0009), summed per
-- chunk. A very common term (in more than prune_df chunks, IDF under prune_idf) adds none when the
-- query has rarer terms: its chunks could only score its small IDF.
listed AS (
    SELECT p.seq,
           sum(t.idf * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / t.avgdl))) AS w
    FROM (SELECT array_agg(id) AS ids, array_agg(idf) AS idfs, max(avgdl) AS avgdl
          FROM terms
          WHERE df <= %(prune_df)s OR idf >= (SELECT least(max(idf), %(prune_idf)s) FROM terms)) q
    CROSS JOIN LATERAL docforge_bm25_top(q.ids, {per_term}) p  -- plain columns: the function is inlined
    CROSS JOIN LATERAL (SELECT q.idfs[p.term_no] AS idf, q.avgdl) t
    GROUP BY p.seq
),
-- A filter that keeps few chunks, when the lists held too few of them (exhaustive): every chunk
-- it keeps that holds a query term. The filter runs first (MATERIALIZED: not a GIN scan of every
-- chunk holding a common term); lexemes are quoted for tsquery syntax.
kept AS MATERIALIZED (
    SELECT c.seq, c.tsv
    FROM chunks c JOIN documents doc ON doc.key = c.doc_key
    WHERE %(exhaustive)s AND {filter}
    LIMIT 20000
),
-- The candidates scored exactly: the best {pool} listed chunks that pass the filter, tested best
-- first (a broad filter stops after about {pool} probes), or, exhaustive, the kept ones.
candidates AS (
    (SELECT x.seq
     FROM (SELECT seq, w FROM listed WHERE NOT %(exhaustive)s ORDER BY w DESC) x
     WHERE NOT %(filtered)s OR EXISTS (
         SELECT FROM chunks c JOIN documents doc ON doc.key = c.doc_key WHERE c.seq = x.seq AND {filter})
     ORDER BY x.w DESC
     LIMIT {pool})
    UNION ALL
    SELECT seq FROM kept
    WHERE tsv @@ (SELECT to_tsquery('simple', string_agg(
        '''' || replace(replace(term, '\', '\\'), '''', '''''') || '''', ' | ')) FROM terms)
),
-- BM25F's term frequency: with heading weight w, an occurrence in the chunk's heading path (its
-- 'A'-weighted tsvector positions, migration 0001) counts w times: tf' = tf + (w - 1) * tf_heading.
-- heading_extra = w - 1; at 0 (the default) this reads nothing and the scores are plain BM25.
headings AS (
    SELECT x.seq, u.lexeme AS term, cardinality(u.positions) AS tf
    FROM candidates x
    JOIN chunks c ON c.seq = x.seq
    CROSS JOIN LATERAL unnest(ts_filter(c.tsv, ARRAY['a']::"char"[])) u
    WHERE %(heading_extra)s <> 0 AND u.lexeme IN (SELECT term FROM terms)
),
scored AS (  -- exact BM25 over every query term, from each candidate's own term list (bm25_docs)
    SELECT x.seq,
           sum(t.idf * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / t.avgdl))) AS bm25
    FROM candidates x
    JOIN bm25_docs d ON d.seq = x.seq
    CROSS JOIN terms t
    LEFT JOIN headings h ON h.seq = x.seq AND h.term = t.term
    CROSS JOIN LATERAL (
        SELECT d.tfs[i] + %(heading_extra)s * coalesce(h.tf, 0) AS tf, d.dl
        FROM (SELECT array_position(d.terms, t.id) AS i) i
        WHERE i IS NOT NULL) p
    GROUP BY x.seq
)
-- score: BM25 / the most the query's terms could score (every term saturated), in [0, 1].
-- found: candidates that passed the filter; cut: whether a list was longer than {per_term}
-- (so that deeper lists could find more of the chunks a filter keeps).
SELECT c.id AS chunk_id,
       c.doc_key,
       c.ordinal,
       c.text_hash,  -- the same text in two documents (a page and its copy) is listed once (fusion.distinct)
       doc.tags,
       (doc.meta->>'link_share')::real AS link_share,  -- an index page ranks lower (pipeline.query.ranking)
       x.bm25 / (SELECT sum(idf) * (%(k1)s + 1) FROM terms) AS score,
       (SELECT count(*) FROM candidates) AS found,
       coalesce((SELECT bool_or(df > {per_term}) FROM terms), false) AS cut
FROM scored x
JOIN chunks c ON c.seq = x.seq
JOIN documents doc ON doc.key = c.doc_key
WHERE {filter}
ORDER BY score DESC, c.id
LIMIT {k}
