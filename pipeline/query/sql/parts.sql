-- Of the given words (lowercase), those the keyword index holds as the first part of a longer token: a
-- dotted, hyphenated, underscored or slashed one ("settings" of "settings.toml": Postgres' English
-- configuration keeps a file or host name whole) (pipeline.query.terms.token_parts).
SELECT w
FROM unnest(%(words)s::text[]) AS w
WHERE EXISTS (
    SELECT 1 FROM bm25_terms
    WHERE term LIKE w || '.%%' OR term LIKE w || '-%%' OR term LIKE w || '\_%%' OR term LIKE w || '/%%'
)
