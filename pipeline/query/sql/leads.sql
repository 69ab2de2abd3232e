-- The opening of given documents (pipeline.query.leads.document_leads): title and first two chunks, where a document
-- says what it is about. Placeholder (pipeline.query.statements): {access} the caller's access
-- condition over `doc` (pipeline.access; TRUE for full access).
SELECT doc.key, doc.title, string_agg(c.text, E'\n\n' ORDER BY c.ordinal)
FROM documents doc JOIN chunks c ON c.doc_key = doc.key
WHERE doc.key = ANY(%(keys)s) AND c.ordinal < 2 AND {access}
GROUP BY doc.key, doc.title
