"""docforge's default cold ingest against a peer pipeline, LlamaIndex `IngestionPipeline`, same model.

    python bench/peer.py --subset 'text/2[0-4]*.md'   # the 93-file rust-rfcs subset
    python bench/peer.py                              # the whole corpus (snapshot-5)
    python bench/peer.py --smoke                      # a tiny made-up corpus, in seconds (bench/smoke.py)

Prints, in one run, chunks, seconds, chunks/s, tokens/s and peak RSS of each side, then docforge ÷ peer
chunks/s (and tokens/s: the chunks differ) and peer ÷ docforge peak RSS (> 1: docforge ahead). The runs
go peer, docforge, peer, each in its own fresh process, so that load drifting on a shared machine weighs
on both sides alike; the peer's figures are the mean of its two runs (each run is printed too, and the
machine's load average as each ended). --backend, --device,
--batch-size and --model set docforge's side as in bench/ingest.py (default: its defaults); the peer
takes the same device, batch size and model, and always runs torch.

docforge: bench/ingest.py's cold run (its corpus set-up, its pipeline process): `ingest_source` into a
fresh store with the default settings. On a CPU that is ONNX Runtime fp32 (the model exported, when its
cache lacks it, before any timing), batch 32, chunks of at most the model's window (256 tokens for
MiniLM, special tokens included), written to Postgres with pgvector.

peer: llama-index-core's `SimpleDirectoryReader` over the same files (plain text, one Document each),
`SentenceSplitter` given the model's own Hugging Face tokenizer (its tiktoken default would download)
and a chunk size of the same window less the special tokens, with docforge's overlap (0), then
`HuggingFaceEmbedding`: sentence-transformers on torch fp32, what a LlamaIndex user gets, on the same
model folder, device and batch size. No vector store: the nodes and their vectors stay in memory
(returned by `run`, the pipeline's default in-memory cache on).

Equal: the files, the model (the packaged all-MiniLM-L6-v2 folder), device, batch size, token budget
(every embedded text is recounted: none over the window), a fresh process per run. Each clock starts
once the framework's own modules are imported (that import is timed apart and printed) and covers the
ML libraries' imports, model load, reading, chunking and embedding; peak RSS (ru_maxrss) is the whole
process's. Not equal: the chunks (docforge parses Markdown and cuts at sections, packing small ones
under their heading path; the splitter cuts at paragraphs and sentences), so their counts differ and
tokens/s is printed beside chunks/s; the header each embedded text carries ("title > headings"
against "file_path: <absolute path>"); the backend (ONNX against torch); and docforge also writes
every chunk and vector to Postgres (the server's memory not counted), which favours the peer.

The peer's packages (PEER_PACKAGES, pinned) are installed on first use, by pip, into PEER_DIR outside
the project: llama-index-core, its Hugging Face embedding and only those of their dependencies that
the project's venv lacks, `--no-deps`, so that the venv's torch, transformers, sentence-transformers
and numpy are the ones both sides run; the peer's process puts PEER_DIR after its site-packages.
llama-index-core ships the NLTK data its splitter reads, so nothing downloads at run time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.ingest import SOURCE, _child, _chunk_texts, _fresh_store, _parse  # noqa: E402

PEER_DIR = Path.home() / ".cache" / "docforge" / "bench-peer"
# Pinned as tested. The rest are what `pip install --dry-run` of the first two adds to the project's venv.
PEER_PACKAGES = (
    "llama-index-core==0.14.25",
    "llama-index-embeddings-huggingface==0.8.0",
    "llama-index-workflows==2.26.1",
    "llama-index-instrumentation==0.6.0",
    "banks==2.5.1",
    "dirtyjson==1.0.8",
    "filetype==1.2.0",
    "nest-asyncio==1.6.0",
    "Deprecated==1.3.1",
    "wrapt==2.5.2",
    "nltk==3.10.4",
    "pillow==13.0.0",
    "greenlet==3.5.6",
    "tiktoken==0.14.0",
    "tinytag==2.3.2",
    "typing-inspect==0.9.0",
    "aiosqlite==0.22.1",
    "dataclasses-json==0.6.7",
    "marshmallow==3.26.2",
    "defusedxml==0.7.1",
    "griffe==2.4.1",
    "griffecli==2.4.1",
    "griffelib==2.4.1",
    "colorama==0.4.6",
)
JOB = "peer.json"  # beside texts.json: what the peer's process reads, written by the parent


def main() -> None:
    args = _parse(__doc__, ["peer"])
    if args.child:
        print("RESULT " + json.dumps(_child_peer(args)), flush=True)
        return
    _install()
    with _fresh_store(args) as (tmp, config):
        texts = _chunk_texts(config, tmp / "texts.json")
        job = _job(config, tmp)
        peer = [_child("peer", config, tmp, script=__file__)]
        load = [os.getloadavg()[0]]  # the machine's 1-minute load average as each run ends
        docforge = _child("pipeline", config, tmp)  # bench/ingest.py's cold ingest, in its own process
        load.append(os.getloadavg()[0])
        peer.append(_child("peer", config, tmp, script=__file__))
        job["load"] = [*load, os.getloadavg()[0]]
        _report(args, texts, job, peer, docforge)


def peer_missing() -> list[str]:
    """The pinned peer packages not installed in PEER_DIR (all of them when it does not exist)."""
    from importlib.metadata import distributions

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    have = {(norm(d.metadata["Name"]), d.version) for d in distributions(path=[str(PEER_DIR)])}
    return [p for p in PEER_PACKAGES if (norm(p.split("==")[0]), p.split("==")[1]) not in have]


def _install() -> None:
    missing = peer_missing()
    if not missing:
        return
    print(f"[bench] installing {len(missing)} peer packages into {PEER_DIR}...", file=sys.stderr, flush=True)
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--upgrade", "--no-deps", "--target", str(PEER_DIR)]
    subprocess.run([*cmd, *PEER_PACKAGES], check=True)
    if peer_missing():
        sys.exit(f"could not install {peer_missing()} into {PEER_DIR}")


def _job(config: Path, tmp: Path) -> dict:
    """What the peer runs on, as docforge's settings say; writes it for the peer's process. Also exports
    docforge's ONNX model when its cache lacks it (once per model cache), so no timing holds an export."""
    from pipeline.chunk import window
    from pipeline.config import load_settings
    from pipeline.embed import Embedder
    from pipeline.sources import open_source

    settings = load_settings(config)
    emb = Embedder(settings.embedding)
    if emb.path is None:
        sys.exit(f"the peer needs the model's files on disk; {emb.name} has none")
    emb.encode(["warm-up"])  # the export, if any, and the backend docforge runs on
    refs = open_source(settings, settings.source(SOURCE)).list_refs()
    job = {
        "files": [str(tmp / "repo" / r.path) for r in refs],  # bench/ingest.py checks the corpus out there
        "model": str(emb.path),
        "window": window(emb.document_window, settings.chunking.max_tokens),
        "overlap": settings.chunking.overlap_tokens,
        "device": emb.device,
        "batch_size": emb.batch_size,
    }
    (tmp / JOB).write_text(json.dumps(job))
    # What bench/ingest.py's pipeline process imports before its clock starts, timed in a fresh process.
    code = "import time; t = time.perf_counter(); import docforge.cli.progress, pipeline.config, pipeline.ingest, "
    code += "pipeline.progress; print(time.perf_counter() - t)"
    job["import_s"] = float(subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout)
    return job


def _child_peer(args: argparse.Namespace) -> dict:
    """The peer's cold run: read, split, embed; the framework's import before the clock starts."""
    t = time.perf_counter()
    sys.path.append(str(PEER_DIR))  # after the venv's site-packages: its torch & co. are the ones used
    from llama_index.core import SimpleDirectoryReader, __version__
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import MetadataMode

    job = json.loads(args.texts.with_name(JOB).read_text())
    import_s, t = time.perf_counter() - t, time.perf_counter()
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(job["model"])
    size = job["window"] - tok.num_special_tokens_to_add()  # the splitter counts text tokens only

    def count(text: str) -> list[int]:
        return tok.encode(text, add_special_tokens=False)

    splitter = SentenceSplitter(chunk_size=size, chunk_overlap=job["overlap"], tokenizer=count)
    embed = HuggingFaceEmbedding(model_name=job["model"], device=job["device"], embed_batch_size=job["batch_size"])
    docs = SimpleDirectoryReader(input_files=job["files"]).load_data()
    nodes = IngestionPipeline(transformations=[splitter, embed]).run(documents=docs)
    seconds = time.perf_counter() - t
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts = [len(tok.encode(n.get_content(metadata_mode=MetadataMode.EMBED))) for n in nodes]  # untimed
    return {
        "version": __version__,
        "files": len(docs),
        "chunks": len(nodes),
        "embedded": sum(n.embedding is not None for n in nodes),
        "seconds": seconds,
        "import_s": import_s,
        "rss_mb": rss_mb,
        "tokens": sum(counts),
        "max_tokens": max(counts, default=0),
        "over_window": sum(c > job["window"] for c in counts),
        "chunk_size": size,
    }


def _report(args: argparse.Namespace, texts: dict, job: dict, peer: list[dict], docforge: dict) -> None:
    first, batch, device = peer[0], job["batch_size"], job["device"]
    ours = {"chunks": docforge["cold"]["chunks_indexed"], "tokens": texts["tokens"]}
    ours |= {"seconds": docforge["cold_s"], "rss_mb": docforge["rss_mb"]}
    mean = {"chunks": first["chunks"], "tokens": first["tokens"]}  # the same every run
    mean |= {key: statistics.mean(p[key] for p in peer) for key in ("seconds", "rss_mb", "import_s")}
    rows = [("peer 1", first), ("docforge", ours)] + [(f"peer {i}", p) for i, p in enumerate(peer[1:], 2)]
    lines = [
        f"corpus    {args.ref} {' '.join(args.subset)}: {texts['files']} files (the peer read {first['files']})",
        f"docforge  ingest_source: backend {docforge['backend']}, batch {batch}, {device}; writes",
        "          to Postgres + pgvector",
        f"peer      LlamaIndex {first['version']} IngestionPipeline, no vector store (nodes and",
        f"          vectors kept in memory): SentenceSplitter ({first['chunk_size']} text tokens, the",
        f"          model's tokenizer, overlap {job['overlap']}) + HuggingFaceEmbedding (torch,",
        f"          batch {batch}, {device})",
        f"{'run':<11}{'chunks':>7}{'tokens':>10}{'seconds':>9}{'chunks/s':>10}{'tokens/s':>10}{'RSS MB':>9}",
    ]
    for name, r in [*rows, ("peer mean", mean)]:
        lines.append(
            f"{name:<11}{r['chunks']:>7}{r['tokens']:>10,}{r['seconds']:>9.1f}{r['chunks'] / r['seconds']:>10.2f}"
            f"{r['tokens'] / r['seconds']:>10,.0f}{r['rss_mb']:>9.0f}"
        )
    rate = ours["chunks"] / ours["seconds"]
    tokens = ours["tokens"] / ours["seconds"]
    speed = [rate / (p["chunks"] / p["seconds"]) for p in [mean, *peer]]
    by_tokens = [tokens / (p["tokens"] / p["seconds"]) for p in [mean, *peer]]
    memory = [p["rss_mb"] / ours["rss_mb"] for p in [mean, *peer]]
    for what, (avg, *each) in (
        ("docforge ÷ peer chunks/s", speed),
        ("docforge ÷ peer tokens/s", by_tokens),
        ("peer ÷ docforge peak RSS", memory),
    ):
        lines.append(f"{what}: {avg:.2f}   (each peer run: {', '.join(f'{x:.2f}' for x in each)})")
    lines += [
        "          (> 1: docforge ahead)",
        f"load      1-min load average as each run ended: {', '.join(f'{x:.1f}' for x in job['load'])}",
        f"          ({os.cpu_count()} cores; the higher, the less the seconds mean)",
        f"chunks    tokens per chunk, special ones in: docforge mean {texts['tokens'] / texts['chunks']:.0f},",
        f"          max {texts['max_tokens']}; peer mean {first['tokens'] / max(first['chunks'], 1):.0f}, max "
        f"{first['max_tokens']}; over the {job['window']}-token window:",
        f"          {texts['over_window']} and {first['over_window']}",
        f"untimed   importing the frameworks: llama_index.core {mean['import_s']:.1f} s, docforge's",
        f"          pipeline.ingest {job['import_s']:.1f} s; all else is in the seconds above",
        "note      only docforge writes (chunks and vectors to Postgres, whose",
        "          server's RSS is not counted): that favours the peer",
    ]
    print("\n".join(lines))
    if args.json_out:
        args.json_out.write_text(json.dumps({"texts": texts, "job": job, "peer": peer, "docforge": docforge}, indent=2))


if __name__ == "__main__":
    main()
