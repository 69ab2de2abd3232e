"""The chunker's contract: never over the model window, text covered in order."""

import random
import re

import pytest

from pipeline.chunk import Chunker, make_header
from pipeline.parse.blocks import text_blocks
from pipeline.parse.markdown import parse_markdown
from pipeline.records import Section
from tests.helpers import shared
from tests.test_blocks import assert_well_formed


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
    rendered = {s.text[b.start : b.end] for s in sections for b in s.blocks}
    for c in chunks:  # blocks inside the chunk's text, in order; each one a section block's text or part of it
        assert_well_formed(c.text, c.blocks)
        for b in c.blocks:
            piece = c.text[b.start : b.end]
            assert piece in rendered or any(piece in r for r in rendered), piece


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
        text = "\n\n".join(paras)
        sections.append(Section(path, text, blocks=tuple(text_blocks(text))))
    return sections


@pytest.mark.parametrize("seed", range(12))
def test_random_documents_obey_the_contract(chunker, seed):
    rng = random.Random(seed)
    sections = random_doc(rng)
    title = rng.choice(["", "Guide", "A very long title " * 30])
    assert_contract(chunker, title, sections, chunker.chunk(title, sections))


def test_small_sections_pack_and_long_ones_split(chunker):
    sections = [
        Section(("T", "a"), "alpha " * 10),
        Section(("T", "b"), "beta " * 10),
        Section(("T", "c"), "gamma delta. " * 400),
    ]
    chunks = chunker.chunk("T", sections)
    assert chunks[0].heading_path == ("T",) and "\n\nb\n" in chunks[0].text  # a and b share a chunk
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


KOREAN = "한국어 텍스트 처리는 형태소 분석이 필요합니다".split()


def joined_identifiers(rng: random.Random, n: int) -> str:
    alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
    return rng.choice("-/_").join("".join(rng.choices(alnum, k=rng.randint(1, 12))) for _ in range(n))


@pytest.mark.parametrize("seed", range(6))
def test_cuts_inside_words_are_recounted_not_estimated(chunker, seed):
    # A cut inside a joined identifier or base64 re-tokenises to more than the offsets say (issue 12: 257-258).
    import base64

    rng = random.Random(seed)
    sections = [
        Section(("Ids",), " ".join(joined_identifiers(rng, rng.randint(50, 400)) for _ in range(3))),
        Section(("Data",), "data:image/png;base64," + base64.b64encode(rng.randbytes(6000)).decode()),
        Section(("한국어",), " ".join(rng.choices(KOREAN, k=900))),
    ]
    assert_contract(chunker, "Title", sections, chunker.chunk("Title", sections))


@pytest.mark.parametrize("max_tokens", [16, 17, 20, 24, 32, 64, 128])
def test_small_windows_on_a_real_sample(chunker, max_tokens):
    # 16-24 used to recurse without end; 32-128 overshot by one on Korean text.
    small = Chunker(chunker.tok, 256, max_tokens=max_tokens)
    readme = shared("corpus", "README.md").read_text()
    korean = "한국어 텍스트 처리는 형태소 분석이 필요합니다. 데이터베이스 검색 색인 문서를 만듭니다. " * 60
    for title, sections in [
        (parse_markdown(readme).title, parse_markdown(readme).sections),
        ("설치 안내서 제목이 아주 깁니다 " * 4, [Section(("설치", "방법"), korean)]),
    ]:
        chunks = small.chunk(title, sections)
        assert_contract(small, title, sections, chunks)
        assert all(c.token_count <= max_tokens for c in chunks)


def test_overlap_larger_than_a_small_window_still_covers_the_text(chunker):
    small = Chunker(chunker.tok, 256, max_tokens=16, overlap_tokens=32)
    sec = [Section((), "0-0-0-0-0-0\n\n\n\n\n\ndata:image/png;base64,AAAAAAAAAAAAAAAAAAAAAAAAAAA=")]
    chunks = small.chunk("", sec)
    assert chunks and all(n <= 16 for n in small.count([c.embed_text for c in chunks]))


def unfenced_lines(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def test_a_code_block_cut_across_chunks_is_closed_and_reopened(chunker):
    """Each chunk of a long fenced block reads as code: re-opened with its own fence line (language kept)
    and closed, so a shell comment ("# restart the service") never reads as a heading."""
    code = "\n".join(f"# step {i}: restart the service\nsystemctl restart unit-{i}" for i in range(120))
    text = f"Run these as root:\n\n```sh\n{code}\n```\n\nThen check the logs."
    sec = Section(("Ops",), text, blocks=tuple(text_blocks(text)))
    chunks = chunker.chunk("Runbook", [sec])
    assert len(chunks) >= 3
    for c in chunks:
        fences = [ln for ln in c.text.split("\n") if ln.startswith("```")]
        assert len(fences) % 2 == 0, c.text  # every block it opens, it closes
        assert not [ln for ln in unfenced_lines(c.text) if ln.startswith("# ")], c.text
    assert all(c.text.startswith("```sh\n") for c in chunks[1:-1])
    assert_contract(chunker, "Runbook", [sec], chunks)
