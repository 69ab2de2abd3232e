-- Each given word's lexeme as the keyword index reads it (Postgres' English configuration: NULL for a
-- word it drops as a stopword), the number of chunks holding it, and the number of chunks indexed
-- (pipeline.query.terms.term_counts).
SELECT w, l.lexeme, coalesce(b.df, 0), (SELECT n FROM bm25_stats LIMIT 1)
FROM unnest(%(words)s::text[]) AS w
LEFT JOIN LATERAL (SELECT (tsvector_to_array(to_tsvector('english', w)))[1] AS lexeme) l ON true
LEFT JOIN bm25_terms b ON b.term = l.lexeme
