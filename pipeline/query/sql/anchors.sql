-- Each given anchor as written ("tune.http.maxbody", "dmarc_report_interval", "--preserve-timestamps"):
-- the chunks holding it as a phrase of the keyword index's lexemes in order (a dotted or hyphenated token
-- is also one lexeme of its own), counted up to a cap (the GIN index on chunks.tsv finds them; no
-- scan of the text); NULL for an anchor of stopwords only, which is no phrase
-- (pipeline.query.terms.anchor_counts).
SELECT a, CASE WHEN numnode(q) = 0 THEN NULL
               ELSE (SELECT count(*) FROM (SELECT 1 FROM chunks WHERE tsv @@ q LIMIT %(cap)s) m) END
FROM unnest(%(anchors)s::text[]) AS a, LATERAL phraseto_tsquery('english', a) AS q
