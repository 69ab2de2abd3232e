"""The chunker's contract: never over the model window, text covered in order."""

import random
import re

import pytest

from pipeline.chunk import Chunker, make_header
from pipeline.parse.markdown import parse_markdown
from pipeline.records import Section
from tests.conftest import shared


@pytest.fixture(scope="module")
def chunker():
    from pipeline.config import EmbeddingConfig
    from pipeline.embed import Embedder

    emb = Embedder(EmbeddingConfig())
    return Chunker(emb.tokenizer, emb.max_seq_length)


def squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


def assert_contract(chunker, title, sections, chunks):
    real = chunker.count([c.embed_text for c in chunks])
    assert real == [c.token_count for c in chunks], "recorded counts are what the model sees"
    assert all(n <= chunker.limit for n in real)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    joined, pos = squash("".join(c.text for c in chunks)), 0
    for s in sections:  # every section's text appears, in order
        body = squash(s.text)
        found = joined.find(body, pos)
        if found < 0:  # a split section: its pieces appear in order
            for word in s.text.split():
                found = joined.find(squash(word), pos)
                assert found >= 0, f"lost text {word!r}"
                pos = found + len(squash(word))
        else:
            pos = found + len(body)
    for c in chunks:  # the header is there, cut short (…) only when it would eat the window
        header = make_header(title, c.heading_path)
        head = c.embed_text.split("\n\n", 1)[0] if header else ""
        assert head == header or (head.endswith("…") and header.startswith(head[:-1]))


WORDS = "the quick brown fox jumps over lazy dog tokenization déjà-vu 東京 x=1; fn main() {} ".split()


def random_doc(rng: random.Random) -> list[Section]:
    sections = []
    for i in range(rng.randint(1, 8)):
        paras = []
        for _ in range(rng.randint(1, 12)):
            n = rng.choice([3, 20, 80, 300, 900])
            sep = rng.choice([" ", " ", "\n", ". "])
            paras.append(sep.join(rng.choice(WORDS) for _ in range(n)))
        if rng.random() < 0.2:
            paras.append("A" * rng.randint(300, 3000))  # one long token run, no spaces
        path = tuple(f"H{i}-{j}" for j in range(rng.randint(0, 3)))
        sections.append(Section(path, "\n\n".join(paras)))
    return sections


@pytest.mark.parametrize("seed", range(12))
def test_random_documents_obey_the_contract(chunker, seed):
    rng = random.Random(seed)
    sections = random_doc(rng)
    title = rng.choice(["", "Guide", "A very long title " * 30])
    assert_contract(chunker, title, sections, chunker.chunk(title, sections))


def test_small_sections_pack_and_long_ones_split(chunker):
    sections = [Section(("T", "a"), "alpha " * 10), Section(("T", "b"), "beta " * 10),
                Section(("T", "c"), "gamma delta. " * 400)]
    chunks = chunker.chunk("T", sections)
    assert chunks[0].heading_path == ("T",) and "## b" in chunks[0].text  # a and b share a chunk
    assert len(chunks) >= 3
    assert_contract(chunker, "T", sections, chunks)


def test_overlap_repeats_text_but_keeps_the_limit(chunker):
    c = Chunker(chunker.tok, 256, overlap_tokens=32)
    sec = [Section((), " ".join(f"w{i}" for i in range(3000)))]
    chunks = c.chunk("", sec)
    assert all(x.token_count <= 256 for x in chunks)
    assert chunks[1].text.split()[0] in chunks[0].text  # the next chunk starts inside the previous


def test_real_corpus_sample_never_exceeds_window(chunker):
    import subprocess
    import tempfile

    bundle = shared("corpus", "rust-rfcs-md.bundle")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["git", "clone", "-q", str(bundle), d], check=True)
        files = sorted(p for p in __import__("pathlib").Path(d, "text").glob("*.md"))[::20]
        for f in files:
            parsed = parse_markdown(f.read_text())
            assert_contract(chunker, parsed.title, parsed.sections, chunker.chunk(parsed.title, parsed.sections))
