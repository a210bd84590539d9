"""The semantic extra's sentence encoder: WordLlama's static token embeddings.

WordLlama (PyPI `wordllama`, MIT) ships its weights in the wheel: a token embedding
table taken from a large model's, trained for sentence similarity, 256 dimensions. A
sentence is the mean of its tokens' vectors, so embedding a question costs a table
lookup (about 0.15 ms here), not a transformer's forward pass (all-MiniLM-L6-v2 in
onnxruntime, which this replaced, took 18 ms on the same 2-core machine; docs/notebook.md
compares the two on the same yardsticks).

Nothing is downloaded: the bundled files are named explicitly (WordLlama 0.4 looks for
its bundled tokenizer under `tokenizer/` but ships it under `tokenizers/`, so without
this it would reach for the network) and downloads are switched off.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

DIMENSIONS = 256
NAME = "wordllama-l2_supercat-256"  # stored beside the vectors: another encoder re-embeds


class StaticEncoder:
    """One text in, a float32 unit vector of DIMENSIONS out."""

    name = NAME

    def __init__(self) -> None:
        import numpy as np
        import wordllama

        self.np = np
        package = Path(wordllama.__file__).parent
        self.model = wordllama.WordLlama.load(
            cache_dir=package, dim=DIMENSIONS, disable_download=True
        )
        # The tokenizer object is shared; one caller at a time keeps it simple and costs
        # nothing measurable at a fraction of a millisecond a text.
        self._lock = threading.Lock()

    def embed(self, text: str) -> Any:
        np = self.np
        with self._lock:
            vector = self.model.embed([text or " "], norm=False)[0]
        vector = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector


def available() -> bool:
    try:
        import numpy  # noqa: F401
        import wordllama  # noqa: F401
    except ImportError:
        return False
    return True
