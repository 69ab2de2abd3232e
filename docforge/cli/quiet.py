"""Keep other libraries' progress bars and warnings off a normal run's stderr; `-v` shows them again.

docforge prints its own progress (pipeline.progress); a "Loading weights 0/103" bar from transformers,
a huggingface_hub download bar or a Dagster preview warning on every command is noise to the reader.
Set before those libraries are imported (they read the environment once, at import); an explicit
setting in the environment is kept.
"""

from __future__ import annotations

import logging
import os
import warnings

# The environment switches of the libraries that print on their own.
_QUIET_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # huggingface_hub, and transformers' "Loading weights" bar
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TOKENIZERS_PARALLELISM": "false",  # else a fork warning after the tokenizer ran
}
# Loggers that speak at WARNING on a normal run about things the user cannot act on.
_QUIET_LOGGERS = ("transformers", "sentence_transformers", "huggingface_hub", "torch", "dagster", "alembic")


def quiet_third_parties(verbose: int) -> None:
    """At verbosity 0, silence third-party bars, warnings and WARNING logs; at -v and above, leave them."""
    if verbose > 0:
        return
    for name, value in _QUIET_ENV.items():
        os.environ.setdefault(name, value)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=r"(transformers|sentence_transformers|huggingface_hub|torch|dagster)\b")
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", message=r".*is (deprecated|a preview|experimental|beta).*")
