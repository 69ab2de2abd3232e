-- What a result cites, for the chunks a search ranked: read once, for the hits it returns (the
-- legs read ids and scores only, so a candidate's text is never read unless it is shown).
-- Placeholder (pipeline.query.statements): {access} the caller's access condition over `doc`
-- (pipeline.access; TRUE for full access): the legs kept only what the caller may read, and so does this.
-- `anchor`: the chunk's nearest anchor (migration 0017); the hit's URL links to it (pipeline.query.hits.deep_url).
SELECT c.id AS chunk_id,
       doc.key AS doc_key,
       doc.source,
       doc.type,
       doc.url,
       doc.title,
       c.section,
       c.ordinal AS chunk_index,
       c.text,
       c.page,
       c.blocks,
       c.anchor
FROM chunks c
JOIN documents doc ON doc.key = c.doc_key
WHERE c.id = ANY(%(ids)s) AND {access}
