-- The dense leg: the {k} chunks nearest the query vector that pass the filter, nearest first.
-- Placeholders (pipeline.query.statements): {vectors} the live generation's table, {vtype} its
-- vector type, {filter} the compiled filter over `c` and `doc` (TRUE without one), ANDed with the
-- caller's access condition (pipeline.access; none for full access), {k} a literal.
-- live_generation: which generation is live in this statement's own snapshot, so that a search
-- that raced a reindex's switch embeds the query again instead of mixing models.
SELECT c.id AS chunk_id,
       c.doc_key,
       c.ordinal,
       c.text_hash,  -- the same text in two documents (a page and its copy) is listed once (fusion.distinct)
       doc.tags,
       (doc.meta->>'link_share')::real AS link_share,  -- an index page ranks lower (pipeline.query.ranking)
       1 - (v.embedding <=> %(vec)s::{vtype}) / 2 AS score,
       (SELECT id FROM generations WHERE state = 'live') AS live_generation
FROM {vectors} v
JOIN chunks c ON c.seq = v.seq
JOIN documents doc ON doc.key = c.doc_key
WHERE {filter}
ORDER BY v.embedding <=> %(vec)s::{vtype}
LIMIT {k}
