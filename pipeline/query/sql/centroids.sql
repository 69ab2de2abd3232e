-- Documents as wholes, for hybrid fusion: each candidate document's centroid (the mean of its
-- chunks' vectors in the live generation) against the query vector, as (1 + cosine) / 2.
-- A document whose chunks are all about the question scores high even when no single chunk
-- uses its words. Placeholders (pipeline.query.statements): {vectors} the live generation's table,
-- {access} whether the caller may read the chunk's document (pipeline.access; TRUE for full access).
SELECT c.doc_key,
       1 - (avg(v.embedding::vector) <=> %(vec)s::vector) / 2 AS score
FROM chunks c
JOIN {vectors} v ON v.seq = c.seq
WHERE c.doc_key = ANY(%(docs)s) AND {access}
GROUP BY c.doc_key
