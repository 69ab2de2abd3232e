"""Cold ingest of the rust-rfcs corpus against raw `SentenceTransformer.encode` of the same chunks.

    python bench/ingest.py                            # the whole corpus (snapshot-5), the default backend
    python bench/ingest.py --subset 'text/2[0-4]*.md' # the 93-file subset
    python bench/ingest.py --backend torch            # the pipeline on torch (the default on a CPU: ONNX)
    python bench/ingest.py --backend onnx-int8        # also: int8 speed-up over fp32 on the same chunks
    python bench/ingest.py --device cuda --skip-cli   # on a GPU (torch fp16)
    python bench/ingest.py --smoke                    # a tiny made-up corpus, in seconds (bench/smoke.py)

Prints, in one run: (a) raw encode of exactly the chunk texts the pipeline makes
(same model, batch size, device; model load excluded), in two interleaved
halves run before and after the pipeline so that load drifting on a shared
machine weighs on both alike; (b) the pipeline's cold
ingest through `ingest_source` (what `docforge ingest` runs for each source) into
a fresh store, imports and model load included; (c) the ratio of their chunks/s;
(d) seconds per stage, and the model's idle time (the cold ingest's wall time less
the time spent encoding); (e) peak RSS of the ingest process (ru_maxrss: its
threads included; the Postgres server and git excluded); (f) chunks over the
model window; then the no-op re-run in-process and the whole `docforge ingest`
command's wall time. Each measurement runs in its own fresh process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
BUNDLE = ROOT.parent / "shared" / "data" / "corpus" / "rust-rfcs-md.bundle"
SOURCE = "rfcs"


def main() -> None:
    args = _parse()
    if args.child:
        print("RESULT " + json.dumps(CHILDREN[args.child](args)), flush=True)
        return
    with _fresh_store(args) as (tmp, config):
        texts = _chunk_texts(config, tmp / "texts.json")
        # The raw baseline in two interleaved halves, one before and one after the pipeline:
        # on a shared machine, load that drifts during the run weighs on both sides alike.
        before = _child("raw", config, tmp, part=0) if not args.skip_raw else None
        pipe = _child("pipeline", config, tmp)
        raw = _merge(before, _child("raw", config, tmp, part=1)) if before else None
        cli = _cli(config) if not args.skip_cli else None
        _report(args, texts, raw, pipe, cli)


@contextlib.contextmanager
def _fresh_store(args: argparse.Namespace) -> Iterator[tuple[Path, Path]]:
    """(a temporary folder, the config path): the corpus checked out, a fresh store; stopped after."""
    with tempfile.TemporaryDirectory(prefix="docforge-bench-") as tmp:
        config = _setup(args, Path(tmp))
        try:
            yield Path(tmp), config
        finally:
            if not os.environ.get("DATABASE_URL"):
                from pipeline.store.db import stop_embedded

                stop_embedded(Path(tmp) / "home")


def _parse(description: str | None = __doc__, children: Sequence[str] = ("raw", "pipeline")) -> argparse.Namespace:
    """This bench's options; bench/peer.py passes its own description and children (no raw baseline)."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", type=Path, default=BUNDLE, help="the corpus git bundle")
    ap.add_argument("--ref", default="snapshot-5", help="tag or commit to check out (default snapshot-5 = main)")
    ap.add_argument("--subset", nargs="+", default=["**/*.md"], metavar="GLOB", help="file globs (default: all md)")
    ap.add_argument("--backend", default="auto", choices=["auto", "torch", "onnx", "onnx-int8"])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    ap.add_argument("--batch-size", type=int, default=None, help="default: the embedder's choice for the device")
    ap.add_argument("--model", help="a local model directory (default: the packaged MiniLM)")
    if "raw" in children:
        ap.add_argument("--skip-raw", action="store_true", help="no raw baseline (pipeline figures only)")
        ap.add_argument("--skip-cli", action="store_true", help="do not time the `docforge ingest` command")
    ap.add_argument("--json-out", type=Path, help="also write every figure as JSON here")
    ap.add_argument("--child", choices=list(children), help=argparse.SUPPRESS)
    ap.add_argument("--config", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--texts", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--part", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke and not args.child:  # a tiny made-up corpus (bench/smoke.py)
        from smoke import scratch, tiny_data

        args.bundle, args.subset = tiny_data(scratch()) / "corpus" / "rust-rfcs-md.bundle", ["text/*.md"]
    return args


def _setup(args: argparse.Namespace, tmp: Path) -> Path:
    """Clone the corpus, write sources.yml, start a fresh store; returns the config path."""
    import yaml

    if not args.bundle.exists():
        sys.exit(f"needs the corpus bundle at {args.bundle}")
    repo = tmp / "repo"
    subprocess.run(["git", "clone", "-q", str(args.bundle), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", args.ref], check=True)
    os.environ["DOCFORGE_HOME"] = str(tmp / "home")
    os.environ.pop("DAGSTER_HOME", None)  # the CLI then uses an ephemeral Dagster instance
    if os.environ.get("DATABASE_URL"):  # a fresh database on that server
        os.environ["DATABASE_URL"] = _fresh_database(os.environ["DATABASE_URL"])
    embedding = {"backend": args.backend, "device": args.device}
    if args.batch_size:
        embedding["batch_size"] = args.batch_size
    if args.model:
        embedding.update(model=args.model, fallbacks=[args.model])
    config = tmp / "sources.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "sources": [{"name": SOURCE, "type": "git", "repo": str(repo), "globs": args.subset}],
                "embedding": embedding,
            }
        )
    )
    from pipeline.store.db import database_url

    if not os.environ.get("DATABASE_URL"):
        database_url(tmp / "home")  # start the embedded server now: not part of any timing
    return config


def _fresh_database(url: str) -> str:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"docforge_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_conninfo(**{**conninfo_to_dict(url), "dbname": name})


def _chunk_texts(config: Path, out: Path) -> dict:
    """The embedded texts the pipeline will make, by its own functions (parse and chunk timed apart)."""
    from pipeline.config import load_settings
    from pipeline.embed import Embedder
    from pipeline.ingest import IngestContext
    from pipeline.parse import parse_document
    from pipeline.sources import open_source

    settings = load_settings(config)
    ctx = IngestContext(settings, embedder=Embedder(settings.embedding))
    source = open_source(settings, settings.source(SOURCE))
    docs = [d for d in source.fetch(source.list_refs()) if hasattr(d, "content")]
    t = time.perf_counter()
    parsed = [parse_document(d) for d in docs]
    t_parse, t = time.perf_counter() - t, time.perf_counter()
    chunks = [c for p in parsed for c in ctx.chunker.chunk(p.title, p.sections)]
    t_chunk = time.perf_counter() - t
    texts = [c.embed_text for c in chunks]
    out.write_text(json.dumps(texts))
    counts = ctx.chunker.count(texts)  # recounted from scratch, special tokens included
    window = ctx.embedder.max_seq_length
    return {
        "files": len(docs),
        "chunks": len(texts),
        "distinct": len(set(texts)),
        "tokens": sum(counts),
        "max_tokens": max(counts, default=0),
        "over_window": sum(n > window for n in counts),
        "window": window,
        "parse_s": t_parse,
        "chunk_s": t_chunk,
    }


def _child(kind: str, config: Path, tmp: Path, part: int = 0, script: str = __file__) -> dict:
    cmd = [
        sys.executable,
        script,
        "--child",
        kind,
        "--config",
        str(config),
        "--texts",
        str(tmp / "texts.json"),
        "--part",
        str(part),
    ]
    print(f"[bench] {kind} {part if kind == 'raw' else ''}...", file=sys.stderr, flush=True)
    res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if res.returncode or line is None:
        sys.exit(f"the {kind} run failed (exit {res.returncode})")
    return json.loads(line.removeprefix("RESULT "))


def _child_raw(args: argparse.Namespace) -> dict:
    """Raw SentenceTransformer.encode (fp32 torch on CPU, fp16 on CUDA) over the texts; plus the backend."""
    from pipeline.config import load_settings
    from pipeline.embed import Embedder

    settings = load_settings(args.config)
    texts = json.loads(args.texts.read_text())[args.part :: 2]  # every other text: the same length mix
    ref = Embedder(settings.embedding.model_copy(update={"backend": "torch"}))
    ref.reference_encode(texts[:64])  # warm-up: kernels, allocator
    t = time.perf_counter()
    base = ref.reference_encode(texts)
    out = {"raw_s": time.perf_counter() - t, "n": len(texts), "device": ref.device, "batch_size": ref.batch_size}
    emb = Embedder(settings.embedding)
    out["encodes"] = {}
    for backend in _compared(emb):  # the configured backend, and on ONNX both precisions: both ratios to torch
        emb = Embedder(settings.embedding.model_copy(update={"backend": backend}))
        t = time.perf_counter()
        emb.encode(texts[:64])  # first use exports (once per model cache) and warms up
        export_s, t = time.perf_counter() - t, time.perf_counter()
        vecs = emb.encode(texts)
        cos = (vecs * base).sum(axis=1)
        out["encodes"][emb.backend] = {
            "s": time.perf_counter() - t,
            "export_s": export_s,
            "cosine_min": float(cos.min()),
            "cosine_mean": float(cos.mean()),
            "max_abs": float(abs(vecs - base).max()),
        }
    return out


def _compared(emb) -> list[str]:
    """The backends whose encode the raw run times beside torch: none for torch; fp32 and int8 when
    the configured backend runs on ONNX Runtime (`auto` on a CPU), whichever of them is the default."""
    _ = emb.runner  # resolves `auto`: onnx on a CPU where it can, else torch
    if emb.backend == "torch":
        return []
    return ["onnx", "onnx-int8"]


def _child_pipeline(args: argparse.Namespace) -> dict:
    """Cold ingest into the empty store, then the no-op re-run, both in this process."""
    from docforge.cli.progress import showing
    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source
    from pipeline.progress import report

    settings = load_settings(args.config)
    with showing(sys.stderr, interval_s=30):
        t = time.perf_counter()
        cold_ctx = IngestContext(settings, progress=report)
        cold = ingest_source(cold_ctx, SOURCE)
        cold_s = time.perf_counter() - t
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    backend = getattr(cold_ctx.embedder, "backend", "remote")
    ctx = IngestContext(settings)  # a fresh embedder, as a new run would have
    t = time.perf_counter()
    noop = ingest_source(ctx, SOURCE)
    noop_s = time.perf_counter() - t
    with ctx.store() as conn:
        n, top, over = conn.execute(
            "SELECT count(*), max(token_count), count(*) FILTER (WHERE token_count > %s) FROM chunks",
            (ctx.embedder.max_seq_length,),
        ).fetchone()
    return {
        "cold": cold.as_dict(),
        "cold_s": cold_s,
        "backend": backend,
        "rss_mb": rss_mb,
        "noop": noop.as_dict(),
        "noop_s": noop_s,
        "noop_model_loaded": ctx.embedder.loaded,
        "store_chunks": n,
        "store_max_tokens": top,
        "store_over_window": over,
    }


CHILDREN = {"raw": _child_raw, "pipeline": _child_pipeline}


def _merge(a: dict, b: dict) -> dict:
    """Both halves of the raw baseline as one run over every text (times add up)."""
    out = {**a, "raw_s": a["raw_s"] + b["raw_s"], "n": a["n"] + b["n"], "halves_s": [a["raw_s"], b["raw_s"]]}
    out["encodes"] = {}
    for name, x in a["encodes"].items():
        y = b["encodes"][name]
        out["encodes"][name] = {
            "s": x["s"] + y["s"],
            "export_s": x["export_s"] + y["export_s"],
            "cosine_min": min(x["cosine_min"], y["cosine_min"]),
            "max_abs": max(x["max_abs"], y["max_abs"]),
            "cosine_mean": (x["cosine_mean"] * a["n"] + y["cosine_mean"] * b["n"]) / (a["n"] + b["n"]),
        }
    return out


def _cli(config: Path) -> dict:
    """The whole `docforge ingest` command on the ingested store (a no-op), as a user runs it."""
    exe = Path(sys.executable).with_name("docforge")
    cmd = [str(exe) if exe.exists() else "docforge", "ingest", "--config", str(config), "--json"]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    try:
        embedded = json.loads(res.stdout)["totals"].get("chunks_embedded")
    except (ValueError, KeyError):
        embedded = None
    return {"cli_s": wall, "rc": res.returncode, "embedded": embedded, "stderr": res.stderr[-500:]}


def _rerun_lines(pipe: dict, cli: dict | None) -> list[str]:
    lines = [
        f"no-op     in-process {pipe['noop_s']:.3f} s = {pipe['noop_s'] / pipe['cold_s']:.5f} of cold; "
        f"{pipe['noop']['chunks_embedded']} embedded; model loaded: {pipe['noop_model_loaded']}   "
        f"(targets ≤ 0.4 s, 0, False)"
    ]
    if cli:
        lines.append(
            f"cli       `docforge ingest` (no-op) whole command: {cli['cli_s']:.2f} s, exit {cli['rc']}, "
            f"{cli['embedded']} embedded   (target ≤ 5 s)"
        )
        if cli["rc"]:
            lines.append("          stderr: " + cli["stderr"].replace("\n", " | "))
    return lines


def _report(args: argparse.Namespace, texts: dict, raw: dict | None, pipe: dict, cli: dict | None) -> None:
    cold, secs = pipe["cold"], pipe["cold"]["seconds"]
    n = cold["chunks_indexed"]
    lines = [
        f"corpus    {args.ref} {' '.join(args.subset)}: {texts['files']} files → {texts['chunks']} chunks "
        f"({texts['distinct']} distinct), {texts['tokens']:,} tokens; backend {args.backend} "
        f"(ran: {pipe['backend']})"
    ]
    pipe_rate = n / pipe["cold_s"]
    if raw:
        raw_rate = texts["chunks"] / raw["raw_s"]
        halves = " + ".join(f"{h:.1f}" for h in raw["halves_s"])
        lines.append(
            f"(a) raw   SentenceTransformer.encode: {raw['raw_s']:.1f} s ({halves}: half before, half "
            f"after the pipeline), {raw_rate:.2f} chunks/s, {texts['tokens'] / raw['raw_s']:,.0f} tokens/s "
            f"(device {raw['device']}, batch {raw['batch_size']})"
        )
    lines.append(
        f"(b) pipe  cold ingest_source: {pipe['cold_s']:.1f} s, {pipe_rate:.2f} chunks/s "
        f"({n} chunks indexed, {cold['chunks_embedded']} embedded)"
    )
    if raw:
        lines.append(f"(c) ratio pipeline/raw torch chunks/s: {pipe_rate / raw_rate:.3f}   (target ≥ 2.0)")
        for name, e in raw["encodes"].items():
            lines.append(
                f"    {name} encode of the same chunks: {e['s']:.1f} s → "
                f"{raw['raw_s'] / e['s']:.2f}× fp32 torch; cosine to fp32 min "
                f"{e['cosine_min']:.6f} mean {e['cosine_mean']:.6f}, max |diff| {e['max_abs']:.1e} "
                f"(export+warm-up {e['export_s']:.1f} s, excluded)"
            )
    other = secs.get("embeddings", 0) - secs.get("embed", 0) - secs.get("write", 0)
    lines.append(
        f"(d) stages crawl {secs.get('documents', 0):.1f} s | parse+chunk {secs.get('chunks', 0):.1f} s "
        f"(offline: parse {texts['parse_s']:.1f} + chunk {texts['chunk_s']:.1f}) | embed "
        f"{secs.get('embed', 0):.1f} s | write {secs.get('write', 0):.1f} s | other {other:.1f} s"
    )
    idle = pipe["cold_s"] - secs.get("embed", 0)
    lines.append(f"    model idle {idle:.1f} s of {pipe['cold_s']:.1f} s ({100 * idle / pipe['cold_s']:.0f}%)")
    lines.append(f"(e) peak RSS of the ingest process: {pipe['rss_mb']:.0f} MB   (target ≤ 1536)")
    lines.append(
        f"(f) chunks over the {texts['window']}-token window: {texts['over_window']} recounted "
        f"(max {texts['max_tokens']}), {pipe['store_over_window']} in the store (max "
        f"{pipe['store_max_tokens']})   (must be 0)"
    )
    print("\n".join(lines + _rerun_lines(pipe, cli)))
    if args.json_out:
        args.json_out.write_text(json.dumps({"texts": texts, "raw": raw, "pipeline": pipe, "cli": cli}, indent=2))


if __name__ == "__main__":
    main()
