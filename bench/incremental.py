"""Incremental ingest on the real rust-rfcs history: cold vs no-op, and what each snapshot step embeds.

    python bench/incremental.py [--globs 'text/000[1-3]*.md' ...] [--data ../shared/data]
    python bench/incremental.py --smoke     # a tiny made-up history of five snapshots (bench/smoke.py)

Prints the cold ingest wall time, the no-op re-run's wall time and its ratio to
the cold run (same process, same store), then per snapshot step the files and
chunks added/updated/deleted, vectors embedded and reused.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import yaml  # noqa: E402

from pipeline.config import load_settings  # noqa: E402
from pipeline.embed import Embedder  # noqa: E402
from pipeline.ingest import IngestContext, ingest_source  # noqa: E402

SUBSET = ["text/000[1-3]*.md", "text/387*.md", "text/0000-*.md", "text/3931-*.md"]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--globs", nargs="+", default=SUBSET, help="file globs (default: the CI subset)")
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        from smoke import scratch, tiny_data

        args.data, args.globs = tiny_data(scratch()), ["text/*.md"]
    bundle = args.data / "corpus" / "rust-rfcs-md.bundle"
    if not bundle.exists():
        sys.exit(f"needs {bundle}")
    with tempfile.TemporaryDirectory(prefix="docforge-bench-") as tmp:
        tmp = Path(tmp)
        repo = tmp / "rfcs"
        subprocess.run(["git", "clone", "-q", str(bundle), str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", "snapshot-1"], check=True)
        config = tmp / "sources.yml"
        config.write_text(
            yaml.safe_dump({"sources": [{"name": "rfcs", "type": "git", "repo": str(repo), "globs": args.globs}]})
        )
        os.environ["DOCFORGE_HOME"] = str(tmp / "home")
        settings = load_settings(config)
        embedder = Embedder(settings.embedding)
        try:
            run_steps(settings, embedder, repo)
        finally:
            from pipeline.store.db import stop_embedded

            stop_embedded(tmp / "home")


def timed(settings, embedder, fresh_embedder=False):
    ctx = IngestContext(settings, embedder=Embedder(settings.embedding) if fresh_embedder else embedder)
    t = time.perf_counter()
    stats = ingest_source(ctx, "rfcs")
    return stats, time.perf_counter() - t, ctx.embedder.loaded


def run_steps(settings, embedder, repo: Path) -> None:
    cold, t_cold, _ = timed(settings, embedder)
    noop, t_noop, loaded = timed(settings, embedder, fresh_embedder=True)
    print(
        f"cold ingest   : {t_cold:8.2f} s  {cold.files_added} files, {cold.chunks_embedded} chunks embedded "
        f"({cold.chunks_embedded / t_cold:.1f} chunks/s)"
    )
    print(
        f"no-op re-run  : {t_noop:8.3f} s  ratio {t_noop / t_cold:.4f} of cold; "
        f"{noop.chunks_embedded} embedded; model loaded: {loaded}"
    )
    print(
        f"\n{'step':<6} {'added':>5} {'upd':>4} {'del':>4} {'unch':>5} {'embedded':>9} {'reused':>7} "
        f"{'indexed':>8} {'deleted':>8} {'seconds':>8}"
    )
    for n in range(2, 6):
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", f"snapshot-{n}"], check=True)
        s, t, _ = timed(settings, embedder)
        print(
            f"{n - 1}→{n:<4} {s.files_added:>5} {s.files_updated:>4} {s.files_deleted:>4} {s.files_unchanged:>5} "
            f"{s.chunks_embedded:>9} {s.chunks_reused:>7} {s.chunks_indexed:>8} {s.chunks_deleted:>8} {t:>8.2f}"
        )


if __name__ == "__main__":
    main()
