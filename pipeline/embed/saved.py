"""Query vectors kept on disk: a new process (`docforge search`, `docforge ask`) that meets a query this
machine has embedded before reads its vector back and loads no model for it.

One file a query under `<model cache>/queries/`, named by the sha256 of (model id, dimension, backend,
device, text): the name does not tell the query, and a vector of one model, width or precision is never
read for another. Float32 bytes, written to a temporary file and renamed into place (a reader never sees
half a vector). Bounded: past MAX_FILES the oldest half is removed. A cache that cannot be read or
written is no error: the query is embedded as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)
MAX_FILES = 2000  # a person's recent queries (1.5 KB each at 384 dimensions: ~3 MB), not a corpus


class SavedQueries:
    """Query vectors of one model, width and backend, by query text."""

    def __init__(self, folder: Path, model: str, dimension: int, backend: str, device: str):
        self.folder = folder
        self.dimension = dimension
        self._prefix = "\0".join((model, str(dimension), backend, device, ""))

    def _file(self, text: str) -> Path:
        return self.folder / (hashlib.sha256((self._prefix + text).encode("utf-8")).hexdigest() + ".f32")

    def get(self, text: str) -> np.ndarray | None:
        """The kept vector of `text`, or None."""
        import numpy as np

        try:
            data = self._file(text).read_bytes()
        except OSError:
            return None
        if len(data) != 4 * self.dimension:  # a file of another width or cut short: not this vector
            return None
        return np.frombuffer(data, dtype=np.float32).copy()

    def put(self, text: str, vector: np.ndarray) -> None:
        """Keep `vector` as `text`'s; then drop the oldest half when there are too many."""
        import numpy as np

        tmp = None
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(np.asarray(vector, dtype=np.float32).tobytes())
            os.replace(tmp, self._file(text))
            tmp = None
            self._bound()
        except OSError as e:
            log.debug("query vector not kept in %s: %s", self.folder, e)
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)

    def _bound(self) -> None:
        with os.scandir(self.folder) as it:
            files = [e for e in it if e.name.endswith(".f32")]
        if len(files) <= MAX_FILES:
            return
        files.sort(key=lambda e: e.stat().st_mtime)
        for e in files[: len(files) // 2]:
            Path(e.path).unlink(missing_ok=True)
