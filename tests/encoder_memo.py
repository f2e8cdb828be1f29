"""The real encoders' forward passes remembered by text, per test process.

Some 70 tests each open a fresh data directory, and with it an empty vector cache, and encode
the demo project's 217 texts again with all-MiniLM-L6-v2 (~0.8 s of a core each; the in-process
tests spent a quarter of their CPU in the encoder's forward pass). Here, in a pytest process, a
base encoder (one :func:`core.encoding.registry.load_encoder` loaded, whose weights never change:
training works on a deep copy) answers a text it has already encoded in this process from
memory: the same vector its forward pass gave. Everything above the forward pass runs as it
does in the product: the vector cache counts what it asks the encoder for
(``EmbeddingCache.encoded``), the encoder's chunks, turns and progress run as before.

A test that needs the forward passes to run (their time, their load on the encoder's turns:
fair shares, a flood of requests) is marked ``encoder_passes``. Servers, workers and CLIs the
tests start in other processes are untouched."""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

import numpy as np

_active = threading.Event()
_lock = threading.Lock()
_tables: weakref.WeakKeyDictionary[Any, dict[str, np.ndarray]] = weakref.WeakKeyDictionary()
# Texts remembered per encoder before its memory is emptied and starts again (~150 MB of MiniLM's
# vectors).
LIMIT = 100_000


def install() -> None:
    """Wrap ``SentenceTransformer.encode``, once, when sentence-transformers is imported (never
    imported here for the memory's sake)."""
    module = sys.modules.get("sentence_transformers")
    SentenceTransformer = getattr(module, "SentenceTransformer", None)
    if SentenceTransformer is None or getattr(SentenceTransformer.encode, "remembers", False):
        return
    real = SentenceTransformer.encode

    def encode(self, sentences, *args, **kwargs):
        table = _table(self) if _active.is_set() else None
        plain = kwargs.get("convert_to_numpy", True) and kwargs.get("normalize_embeddings")
        if table is None or not plain or args or isinstance(sentences, str) or not sentences:
            return real(self, sentences, *args, **kwargs)
        with _lock:
            found = {t: table[t] for t in sentences if t in table}
        missing = [t for t in dict.fromkeys(sentences) if t not in found]
        if missing:
            vectors = real(self, missing, *args, **{**kwargs, "batch_size": len(missing)})
            new = dict(zip(missing, np.asarray(vectors, dtype=np.float32), strict=True))
            with _lock:
                if len(table) + len(new) > LIMIT:
                    table.clear()
                table.update(new)
            found.update(new)
        return np.stack([found[t] for t in sentences])

    encode.remembers = True  # type: ignore[attr-defined]
    SentenceTransformer.encode = encode


def _table(model: Any) -> dict[str, np.ndarray] | None:
    """``model``'s memory when it is a base encoder of this process's registry, else None."""
    from core.encoding import registry

    if not any(e.model is model for e in list(registry._loaded.values())):
        return None
    with _lock:
        return _tables.setdefault(model, {})


def active(on: bool) -> None:
    """Answer from memory (``on``) or run every forward pass."""
    if on:
        _active.set()
    else:
        _active.clear()
