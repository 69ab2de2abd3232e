-- The typed blocks of given chunks (pipeline.query.blocks.chunk_blocks), for readers of chunks a search
-- did not just return (the answer layer's neighbours). Placeholder (pipeline.query.statements):
-- {access} the caller's access condition over `doc` (pipeline.access; TRUE for full access).
SELECT c.id, c.blocks
FROM chunks c
JOIN documents doc ON doc.key = c.doc_key
WHERE c.id = ANY(%(ids)s) AND {access}
