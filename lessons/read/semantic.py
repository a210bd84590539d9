"""The optional semantic index: sentence embeddings of learned questions, in SQLite.

Installed with the `semantic` extra (numpy, threadpoolctl, and `wordllama`, whose wheel
carries its model: lessons/read/encoders.py). Nothing is downloaded; without the extra the
notebook stays lexical.

Vectors live in `note_vectors` (one float32 blob per example note, exact), made by the
encoder named in `notebook_meta` ('vector_encoder'); vectors of another encoder (an older
notebook) are made again from the notes' questions the first time the index is opened.
Recall keeps them in memory per notebook as int8 codes, a quarter of the bytes to read
for each question, and scans them all; every code knows how far it is from its vector,
so the scan knows which notes *could* be among the nearest above the floor, and only
those are compared again with their exact float32 vector. What recall gets is what a
float32 scan of every vector would give.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import logging
import threading
from typing import Any

from lessons.read.encoders import DIMENSIONS, NAME, StaticEncoder
from lessons.read.encoders import available as _encoder_available

log = logging.getLogger("conductor.notebook")

__all__ = [
    "DIMENSIONS",
    "VectorIndex",
    "available",
    "embed",
    "encoder",
    "forget",
]

CHUNK = 1024  # rows of codes made float32 at a time (1.5 MB): few calls, still in cache
# float32 rounding in a code's product with a question (at most 384 ulps of a sum no
# larger than |v|·|q|), added to the code's own distance from its vector.
SLACK = 1e-4
PARALLEL_FROM = 20_000  # vectors from which the scan is split between two threads


def available() -> bool:
    """Whether the semantic extra (and so its model) is installed."""
    return _encoder_available()


@functools.lru_cache(maxsize=1)
def encoder() -> StaticEncoder:
    return StaticEncoder()


@functools.lru_cache(maxsize=128)
def _embed(text: str) -> Any:
    vector = encoder().embed(text)
    vector.flags.writeable = False
    return vector


def embed(text: str) -> Any:
    """The text's unit vector (read-only). Cached: recall embeds a question before the
    run and learning embeds the same question after it."""
    return _embed(text)


def forget() -> None:
    """Drop every cached embedding (benchmarks and tests)."""
    _embed.cache_clear()


def vector_blob(text: str) -> bytes:
    return bytes(embed(text).tobytes())


class VectorIndex:
    """A notebook's example vectors in memory as int8 codes, topped up as notes are
    written (the table only grows: `insert or ignore`, nothing deleted).

    A vector v is kept as codes c (int8) and a scale s with v ≈ s·c, and the distance
    d = |v - s·c| (plus float32 rounding). For a question q, |q·v - s·(q·c)| ≤ d·|q|:
    a note whose estimate plus that cannot reach the floor, or the k-th best estimate
    less its own, cannot be among the nearest, and the rest are compared exactly.
    """

    def __init__(self) -> None:
        import numpy as np

        self.np = np
        self._lock = threading.Lock()
        self.last_rowid = 0
        self.size = 0
        self.ids: list[str] = []
        self.rowids = np.zeros(0, dtype=np.int64)
        self.codes = np.zeros((0, DIMENSIONS), dtype=np.int8)
        self.scales = np.zeros(0, dtype=np.float32)
        self.slack = np.zeros(0, dtype=np.float32)
        self._buffers = [np.empty((CHUNK, DIMENSIONS), dtype=np.float32) for _ in range(2)]

    # -- keeping up with the table --------------------------------------------------------

    def refresh(self, book: Any) -> None:
        """Read the vectors written since the last look (all of them the first time, after
        making any that are missing or were made by another encoder)."""
        if not self.last_rowid and not self.size:
            try:
                index_every_example(book)
            except Exception as exc:  # a read-only or busy notebook: recall with what is there
                log.warning("could not add the missing note vectors (%s); recall goes on", exc)
        top = book.read_one("select max(rowid) m from note_vectors")["m"] or 0
        if top == self.last_rowid:
            return
        rows = book.read(
            "select rowid r, note_id, vec from note_vectors where rowid > ? order by rowid",
            (self.last_rowid,),
        )
        self.add([r["r"] for r in rows], [r["note_id"] for r in rows], [r["vec"] for r in rows])
        self.last_rowid = max(top, self.last_rowid)

    def add(self, rowids: list[int], ids: list[str], blobs: list[bytes]) -> None:
        np = self.np
        width = DIMENSIONS * 4
        keep = [i for i, blob in enumerate(blobs) if len(blob) == width]
        if len(keep) < len(blobs):
            log.warning("%d note vectors of the wrong size skipped", len(blobs) - len(keep))
        if not keep:
            return
        vectors = np.frombuffer(b"".join(blobs[i] for i in keep), dtype=np.float32)
        codes, scales, slack = quantize(vectors.reshape(len(keep), DIMENSIONS))
        end = self.size + len(keep)
        if end > len(self.codes):  # grow by half again: appending one at a time stays cheap
            capacity = max(end, len(self.codes) * 3 // 2, 1024)
            self.codes = _grown(np, self.codes, capacity)
            self.scales = _grown(np, self.scales, capacity)
            self.slack = _grown(np, self.slack, capacity)
            self.rowids = _grown(np, self.rowids, capacity)
        self.codes[self.size : end] = codes
        self.scales[self.size : end] = scales
        self.slack[self.size : end] = slack
        self.rowids[self.size : end] = [rowids[i] for i in keep]
        self.ids.extend(ids[i] for i in keep)
        self.size = end

    # -- searching ------------------------------------------------------------------------

    def estimate(self, vector: Any) -> Any:
        """s·(q·c) for every stored vector: two threads (numpy lets go of the GIL)
        each turning a chunk of codes into float32 at a time, on one BLAS thread each:
        a BLAS thread that spins waiting for its share of a product this small costs
        many times the product on a busy machine."""
        np = self.np
        out = np.empty(self.size, dtype=np.float32)
        half = (self.size // 2 // CHUNK) * CHUNK if self.size >= PARALLEL_FROM else 0
        with _one_blas_thread():
            other = _helper().submit(self._scan, vector, out, half, self.size, 1) if half else None
            self._scan(vector, out, 0, half or self.size, 0)
            if other is not None:
                other.result()
        out *= self.scales[: self.size]
        return out

    def _scan(self, vector: Any, out: Any, start: int, stop: int, buffer: int) -> None:
        np, block = self.np, self._buffers[buffer]
        for first in range(start, stop, CHUNK):
            last = min(first + CHUNK, stop)
            rows = block[: last - first]
            rows[...] = self.codes[first:last]
            np.dot(rows, vector, out=out[first:last])

    def nearest(
        self, book: Any, vector: Any, k: int, floor: float = -1.0
    ) -> list[tuple[str, float]]:
        """The k notes whose vectors are nearest the unit `vector`, of those whose cosine
        is above `floor`: (note id, cosine), nearest first, exact."""
        np = self.np
        vector = np.asarray(vector, dtype=np.float32)
        with self._lock:
            self.refresh(book)
            if not self.size or k <= 0:
                return []
            guess = self.estimate(vector)
            reach = self.slack[: self.size] * float(np.linalg.norm(vector))
            upper = guess + reach
            maybe = np.flatnonzero(upper > floor)
            if len(maybe) > k:
                lower = guess[maybe] - reach[maybe]
                kth = float(np.partition(lower, len(lower) - k)[len(lower) - k])
                maybe = maybe[upper[maybe] >= max(kth, floor)]
            rowids = {int(self.rowids[i]): self.ids[i] for i in maybe}
        exact = []
        for rowid, blob in _vectors(book, list(rowids)):
            cosine = float(np.frombuffer(blob, dtype=np.float32) @ vector)
            if cosine > floor:
                exact.append((cosine, rowid))
        exact.sort(key=lambda pair: (-pair[0], pair[1]))
        return [(rowids[rowid], cosine) for cosine, rowid in exact[:k]]


@functools.lru_cache(maxsize=1)
def _blas() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # the extra without it: BLAS keeps its own thread count
        return None
    return ThreadpoolController().select(user_api="blas")


@functools.lru_cache(maxsize=1)
def _helper() -> concurrent.futures.ThreadPoolExecutor:
    """The scan's second thread."""
    return concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="notebook-scan")


def _one_blas_thread() -> Any:
    blas = _blas()
    return blas.limit(limits=1) if blas is not None else contextlib.nullcontext()


def quantize(vectors: Any) -> tuple[Any, Any, Any]:
    """int8 codes, scales, and how far each code's estimate of a product with a unit
    vector can be from the exact one (its distance from its vector, and rounding)."""
    import numpy as np

    scales = np.abs(vectors).max(axis=1) / 127
    scales[scales == 0] = 1.0
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    slack = np.linalg.norm(vectors - codes * scales[:, None], axis=1)
    slack += SLACK * np.linalg.norm(vectors, axis=1)
    return codes, scales.astype(np.float32), slack.astype(np.float32)


def index_every_example(book: Any) -> int:
    """Give every live example note a vector of this encoder: drop the vectors of another
    encoder (named in notebook_meta), embed the notes with none or with one of the wrong
    size (an older notebook, or notes learned with the index off). Returns how many were
    made. Cheap with a static encoder: 100,000 questions take about 15 s, once."""
    from lessons.forms.problems import core_input

    row = book.read_one("select value from notebook_meta where key = 'vector_encoder'")
    if row is not None and str(row["value"]) != NAME:
        log.warning("note vectors were made by %s: making them again with %s", row["value"], NAME)
        book.write(lambda conn: conn.execute("delete from note_vectors"))
    todo = book.read(
        "select n.id, n.source_question q from notes n left join note_vectors v "
        "on v.note_id = n.id where n.kind = 'example' and n.retired = 0 "
        "and (v.note_id is null or length(v.vec) != ?)",
        (DIMENSIONS * 4,),
    )
    for start in range(0, len(todo), 2000):
        batch = todo[start : start + 2000]
        rows = [(r["id"], vector_blob(core_input(r["q"], book.scoring))) for r in batch]
        book.write(lambda conn, rows=rows: conn.executemany(
            "insert or replace into note_vectors (note_id, vec) values (?, ?)", rows
        ))  # fmt: skip
    if todo or row is None or str(row["value"]) != NAME:  # nothing changed: no write
        book.write(lambda conn: claim_vectors(conn, replace=True))
    return len(todo)


def claim_vectors(conn: Any, *, replace: bool = False) -> None:
    """Name this encoder as the maker of the notebook's vectors. Learning claims a
    notebook only when no encoder is named yet, so vectors of another encoder are still
    found and made again the next time the index is opened."""
    conn.execute(
        f"insert or {'replace' if replace else 'ignore'} into notebook_meta (key, value) "
        "values ('vector_encoder', ?)",
        (NAME,),
    )


def _grown(np: Any, array: Any, capacity: int) -> Any:
    out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


def _vectors(book: Any, rowids: list[int]) -> list[tuple[int, bytes]]:
    """The exact float32 blobs of these rows."""
    out: list[tuple[int, bytes]] = []
    for start in range(0, len(rowids), 500):
        part = rowids[start : start + 500]
        marks = ",".join("?" * len(part))
        out.extend(
            (r["r"], r["vec"])
            for r in book.read(
                f"select rowid r, vec from note_vectors where rowid in ({marks})", part
            )
        )
    return out
