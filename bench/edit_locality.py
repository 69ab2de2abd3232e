"""Edit locality: chunks a one-sentence edit inside a paragraph makes the next ingest embed.

    python bench/edit_locality.py [--subset 'text/2[0-4]*.md'] [--edits 10] [--data ../shared/data]
    python bench/edit_locality.py --dir /usr/share/doc/pkg/html --edits 50   # any folder of pages
    python bench/edit_locality.py --smoke     # a tiny made-up history (bench/smoke.py)

Parses and chunks as ingest does (no store): a file's chunks before and after one sentence is
inserted after a sentence end inside one of its paragraphs; an edited file's chunk is embedded
when its embedded text is in none of the corpus's chunks before (vectors are reused by text hash,
store-wide). Prints per edit the median and p90 of chunks embedded, and the total for the first
`--edits` edits as one re-ingest (one edit in each of that many files).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.chunk import Chunker  # noqa: E402
from pipeline.config import EmbeddingConfig  # noqa: E402
from pipeline.embed import Embedder  # noqa: E402
from pipeline.parse import parse_document  # noqa: E402
from pipeline.parse.formats import detect  # noqa: E402
from pipeline.records import DocRef, Document  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SENTENCE = "This sentence was added to measure how far one edit reaches. "
_END = re.compile(r"[a-z)][.!?] (?=[A-Z])")  # a sentence end inside running prose


def chunk_texts(chunker: Chunker, name: str, text: str) -> list[str]:
    kind = detect(name) or "text"
    doc = Document(DocRef(f"x:{name}", name), kind, "", "", text, "")
    parsed = parse_document(doc)
    return [c.embed_text for c in chunker.chunk(parsed.title, parsed.sections, parsed.pack)]


def edit(text: str, rng: random.Random) -> str | None:
    """The text with one sentence inserted after a sentence end inside a prose paragraph, or None."""
    spots, fenced = [], False
    at = 0
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.startswith(("#", " ", "\t", "|", ">", "-", "*")):
            spots += [at + m.end() for m in _END.finditer(line)]
        at += len(line) + 1
    if not spots:
        return None
    pos = rng.choice(spots)
    return text[:pos] + SENTENCE + text[pos:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subset", default="text/2[0-4]*.md", help="files of the rust-rfcs bundle (93 by default)")
    ap.add_argument("--dir", type=Path, help="a folder of pages instead of the bundle")
    ap.add_argument("--edits", type=int, default=10, help="edits counted as one re-ingest")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        from smoke import scratch, tiny_data

        args.data, args.subset = tiny_data(scratch()), "text/*.md"
    with tempfile.TemporaryDirectory(prefix="docforge-edits-") as tmp:
        if args.dir:
            files = sorted(p for p in args.dir.rglob("*") if p.is_file() and detect(p.name))
        else:
            repo = Path(tmp) / "rfcs"
            bundle = args.data / "corpus" / "rust-rfcs-md.bundle"
            subprocess.run(["git", "clone", "-q", str(bundle), str(repo)], check=True)
            files = sorted(repo.glob(args.subset))
        emb = Embedder(EmbeddingConfig())
        chunker = Chunker(emb.tokenizer, emb.document_window)
        texts = {f: f.read_text("utf-8", "replace") for f in files}
        before = {f: chunk_texts(chunker, f.name, t) for f, t in texts.items()}
        known = {c for cs in before.values() for c in cs}
        rng = random.Random(args.seed)
        per_edit: list[int] = []
        for f in rng.sample(files, len(files)):
            changed = edit(texts[f], rng)
            if changed is None:
                continue
            per_edit.append(sum(c not in known for c in chunk_texts(chunker, f.name, changed)))
    first = per_edit[: args.edits]
    per_edit = per_edit or [0]
    p90 = sorted(per_edit)[int(0.9 * (len(per_edit) - 1))]
    print(f"files {len(files)}  chunks {len(known)}  edits {len(per_edit)}")
    print(
        f"embedded per edit: median {statistics.median(per_edit):.1f}  p90 {p90}  mean {statistics.mean(per_edit):.2f}"
    )
    print(f"first {len(first)} edits as one re-ingest: {sum(first)} chunks embedded")


if __name__ == "__main__":
    main()
