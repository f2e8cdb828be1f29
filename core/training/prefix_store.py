"""The frozen lower layers' states kept across trainings and processes (issue 71 item 3).

A retrain computes what the frozen embeddings and lowest layers give for every training text
(:func:`core.training.prefix.cached_prefix`) and, when it measures a version, for every test
question too (:class:`core.training.prefix.PrefixedEncoder`). Those layers are the same weights
in every version of a project trained with them frozen, and in the base encoder itself, so what
they gave once holds for every later job: the test split rarely changes, the pool grows by a
few labels. A :class:`PrefixStore` keeps those states by the frozen part's weights (a hash of
them, :func:`frozen_fingerprint`: a version trained with other layers frozen, or none, has
another key and shares nothing), in memory for the next job of this process and in one file
per key in ``folder`` for the next process (the CLI's ``train``, a worker that restarted).

A file is written whole under a temporary name and renamed, and is never trusted: one that does
not read as states of that width is deleted and the states are computed again. A store holds at
most ``cap_bytes`` of states per key (the texts added last kept) and ``keep`` keys in memory.

Example:
    >>> import tempfile
    >>> store = PrefixStore(Path(tempfile.mkdtemp()))
    >>> store.save()  # nothing held yet: nothing written
    0
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from core.training.prefix import Key, PrefixStates, bert_parts

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

# Per key: 256 MB of float32 states is ~40,000 MiniLM utterances of 16 tokens (a BANKING77
# project's train and test splits are ~4,000).
CAP_BYTES = 256 * 2**20
# Keys held in memory: the base encoders (and frozen parts) of the projects trained last.
KEEP = 2


def frozen_fingerprint(model: SentenceTransformer, layers: int) -> str | None:
    """A hash of the weights that compute the states (the token embeddings and the lowest
    ``layers`` layers) and of the tokenizer's vocabulary size; None when the model is not
    BERT-like (:func:`core.training.prefix.bert_parts`)."""
    parts = bert_parts(model)
    if parts is None or layers <= 0 or layers >= len(parts[2]):
        return None
    _, embeddings, stack = parts
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{layers}:{type(parts[0]).__name__}".encode())
    for module in (embeddings, *stack[:layers]):
        for name, tensor in module.state_dict().items():
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


class PrefixStore:
    """The states of frozen parts by their fingerprint (see the module); ``folder`` None: in
    memory only."""

    def __init__(
        self, folder: Path | None, *, cap_bytes: int = CAP_BYTES, keep: int = KEEP
    ) -> None:
        self.folder = folder
        self.cap_bytes, self.keep = cap_bytes, keep
        self._held: OrderedDict[str, PrefixStates] = OrderedDict()
        self._saved: dict[str, int] = {}  # key -> how many texts its file holds
        self._lock = threading.Lock()

    def states(self, model: SentenceTransformer, layers: int) -> PrefixStates | None:
        """The states known for ``model``'s frozen part (the lowest ``layers`` layers), on the
        model's device, to be filled with what it computes next; None when the model has no
        such part or no pad token."""
        pad_id = getattr(getattr(model, "tokenizer", None), "pad_token_id", None)
        key = frozen_fingerprint(model, layers) if pad_id is not None else None
        if key is None or pad_id is None:
            return None
        with self._lock:
            held = self._held.get(key)
            if held is None:
                device = torch.device(model.device)
                held = PrefixStates(layers, int(pad_id), self._read(key, device))
                self._saved[key] = len(held.states)
                self._held[key] = held
                while len(self._held) > self.keep:
                    self._saved.pop(self._held.popitem(last=False)[0], None)
            self._held.move_to_end(key)
            return held

    def save(self) -> int:
        """Write the states that grew since they were read or written (trimmed to
        :attr:`cap_bytes`, the texts added last kept); how many files were written."""
        if self.folder is None:
            return 0
        written = 0
        with self._lock:
            for key, held in self._held.items():
                trim(held, self.cap_bytes)
                if len(held.states) == self._saved.get(key):
                    continue
                self._write(key, held.states)
                self._saved[key] = len(held.states)
                written += 1
        return written

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / f"{key}.npz"

    def _read(self, key: str, device: torch.device) -> dict[Key, torch.Tensor]:
        if self.folder is None or not self._path(key).exists():
            return {}
        path = self._path(key)
        try:
            with np.load(path) as f:
                ids, lengths, flat = f["ids"], f["lengths"], f["states"]
            if flat.ndim != 2 or int(lengths.sum()) != len(ids) or len(ids) != len(flat):
                raise ValueError("the ids and states differ in length")
            if not np.isfinite(flat).all():
                raise ValueError("states that are not finite")
        except Exception as e:  # a torn or foreign file: computed again
            logger.warning("frozen layers' states in %s not read (%s): deleted", path.name, e)
            path.unlink(missing_ok=True)
            return {}
        rows = torch.from_numpy(flat).to(device)
        out: dict[Key, torch.Tensor] = {}
        start = 0
        for n in lengths.tolist():
            out[tuple(ids[start : start + n].tolist())] = rows[start : start + n]
            start += n
        logger.info("read the frozen layers' states of %d texts from %s", len(out), path.name)
        return out

    def _write(self, key: str, states: dict[Key, torch.Tensor]) -> None:
        assert self.folder is not None
        self.folder.mkdir(parents=True, exist_ok=True)
        keys = list(states)
        ids = np.fromiter((i for k in keys for i in k), dtype=np.int64)
        lengths = np.array([len(k) for k in keys], dtype=np.int64)
        flat = torch.cat([states[k].detach().float().cpu() for k in keys]).numpy()
        tmp = self.folder / f".{key}.{uuid.uuid4().hex}.tmp.npz"
        try:
            with open(tmp, "wb") as f:
                np.savez(f, ids=ids, lengths=lengths, states=flat)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._path(key))
        finally:
            tmp.unlink(missing_ok=True)


def trim(states: PrefixStates, cap_bytes: int) -> None:
    """Drop the texts added first until the states take at most ``cap_bytes``."""
    size = sum(t.numel() * t.element_size() for t in states.states.values())
    for key in list(states.states):
        if size <= cap_bytes:
            return
        gone = states.states.pop(key)
        size -= gone.numel() * gone.element_size()
