"""Near-identical hits of two documents collapse to the better one (pipeline.query.near)."""

from pipeline.query.hits import Hit
from pipeline.query.near import NEAR_SHARE, collapse, jaccard, shingles

BODY = " ".join(f"word{i} of the section about replication slots and their limits" for i in range(20))


def hit(doc: str, text: str, score: float) -> Hit:
    return Hit(f"{doc}#0", doc, "src", "html", doc, doc, "S", 0, text, score)


def test_a_printable_copy_collapses_to_the_better_hit() -> None:
    page = hit("src:page.html", BODY, 0.9)
    printable = hit("src:page-print.html", BODY + " Printable version, generated 2026-12-01.", 0.8)
    other = hit("src:other.html", "A different page entirely about backups and restore order.", 0.7)
    assert jaccard(shingles(page.text), shingles(printable.text)) >= NEAR_SHARE
    assert [h.doc_key for h in collapse([page, printable, other])] == ["src:page.html", "src:other.html"]


def test_pages_sharing_a_paragraph_stay_apart() -> None:
    shared = "See the notes at the start of this chapter for the conventions used."
    a = hit("src:a.html", shared + " " + BODY, 0.9)
    b = hit("src:b.html", shared + " Indexes speed up reads and slow down writes of every table.", 0.8)
    assert len(collapse([a, b])) == 2


def test_two_chunks_of_one_document_are_not_collapsed() -> None:
    assert len(collapse([hit("src:a.html", BODY, 0.9), hit("src:a.html", BODY, 0.8)])) == 2
