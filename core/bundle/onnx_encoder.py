"""Runs an exported ONNX encoder folder (int8, or fp32 for a bundle) with only ``onnxruntime``,
``tokenizers`` and numpy.

:class:`OnnxEncoder` has the same ``encode(texts)`` as :class:`core.encoding.registry.Encoder`, so
a bundle or the live app can serve it in place of the torch model (see :mod:`core.bundle.onnx`
for the export and its parity check). It imports nothing else at run time: a bundle's
``predict.py`` carries this file (:mod:`core.bundle.standalone`).

A folder holds ``onnx_config.json`` (the graph's inputs, maximum length, padding, dimension; its
``model``: the graph's file, :data:`MODEL_FILE` when absent), ``tokenizer.json`` and the graph.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from core.encoding.fair_share import ChunkCost, Turns
    from core.encoding.registry import Encoder

MODEL_FILE = "model.int8.onnx"
CONFIG_FILE = "onnx_config.json"
TOKENIZER_FILE = "tokenizer.json"
ONNX_FORMAT = 1
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


class OnnxEncoder:
    """Runs an exported ONNX folder: tokenise, run the graph, L2-normalise.

    ``load_model=False`` reads only the tokenizer and config (for :meth:`feeds`). With ``turns``
    (the live app's :data:`core.encoding.fair_share.SHARED`) each batch takes a turn on the process's
    shared line, as the fp32 encoder does, so a one-line request goes before a long batch; with
    ``costs`` too (the app's :class:`core.encoding.fair_share.ChunkCost`) each batch is sized to
    about one turn's time, so that request waits for one short batch, never for 64 texts.

    Example:
        >>> enc = OnnxEncoder(Path("bundle/onnx"), threads=2)  # doctest: +SKIP
        >>> enc.encode(["hello"]).dtype  # doctest: +SKIP
        dtype('float32')

    ``anchors``: as :attr:`core.encoding.registry.Encoder.anchors` (the int8 copy of an old
    version with a separate label encoder embeds its anchors with that label encoder).
    ``model``: the graph's bytes, when the folder's file is not the whole graph (a version's
    copy that shares its base copy's weights: :mod:`core.bundle.onnx_shared`).
    """

    anchors: Encoder | None = None

    def __init__(
        self,
        folder: Path,
        *,
        threads: int | None = None,
        allow_spinning: bool = True,
        load_model: bool = True,
        turns: Turns | None = None,
        model: bytes | None = None,
        costs: ChunkCost | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.folder = folder
        self.config: dict[str, Any] = json.loads((folder / CONFIG_FILE).read_text("utf-8"))
        if self.config.get("format") != ONNX_FORMAT:
            raise ValueError(f"Unknown ONNX folder format {self.config.get('format')!r}.")
        self.inputs: list[str] = list(self.config["inputs"])
        self.model_file = str(self.config.get("model") or MODEL_FILE)
        if Path(self.model_file).name != self.model_file or self.model_file.startswith("."):
            raise ValueError(f"onnx_config.json names the graph {self.model_file!r}: a file name.")
        tok = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        tok.enable_truncation(max_length=int(self.config["max_seq_length"]))
        tok.no_padding()
        self._pad_id = int(self.config["pad_id"])
        self._tokenizer = tok
        self._lock = threading.Lock()
        self._turns = turns
        # what fits one turn (the live app's :class:`core.encoding.fair_share.ChunkCost`)
        self._costs = costs
        precision = str(self.config.get("precision") or "int8")
        self.name = f"{self.config.get('source', 'encoder')}+{precision}-onnx"
        self.fingerprint = f"{self.config.get('fingerprint', '')}+{precision}"
        if self.config.get("variant"):
            self.fingerprint += f"-{self.config['variant']}"
        self._session: Any = None
        if load_model:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            if not allow_spinning:  # kinder to a CPU shared with other processes
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            if threads is not None:
                opts.intra_op_num_threads = threads
                opts.inter_op_num_threads = 1
            self._session = ort.InferenceSession(
                model if model is not None else str(folder / self.model_file),
                sess_options=opts,
                providers=["CPUExecutionProvider"],
            )

    @property
    def dim(self) -> int:
        return int(self.config["dim"])

    @property
    def device(self) -> str:
        return "cpu"

    def _feed(self, encodings: list[Any], idx: Sequence[int]) -> dict[str, np.ndarray]:
        width = max(len(encodings[i].ids) for i in idx)
        arrays = {name: np.zeros((len(idx), width), dtype=np.int64) for name in INPUT_NAMES}
        arrays["input_ids"].fill(self._pad_id)
        for row, i in enumerate(idx):
            enc = encodings[i]
            n = len(enc.ids)
            arrays["input_ids"][row, :n] = enc.ids
            arrays["attention_mask"][row, :n] = enc.attention_mask
            arrays["token_type_ids"][row, :n] = enc.type_ids
        return {name: arrays[name] for name in self.inputs}

    def _turn(self, *, urgent: bool) -> contextlib.AbstractContextManager[None]:
        return self._turns.turn(urgent=urgent) if self._turns else contextlib.nullcontext()

    def _chunk(self, encodings: list[Any], order: list[int], start: int, limit: int) -> int:
        """How many texts (of ``order``, shortest first, from ``start``) the next batch takes:
        ``limit``; in the live app (its shared turns) as many as fit one turn of about
        :data:`core.encoding.fair_share.TURN_SECONDS` (a one-line request waits for one such
        turn, never for 64 texts on an overloaded CPU: seconds), learnt from the batches timed."""
        if self._costs is None:
            return limit
        width = len(encodings[order[min(start + limit, len(order)) - 1]].ids)
        fits = int(self._costs.budget(default=8.0 * width) // max(width, 1))
        return max(1, min(limit, max(4, fits)))

    def feeds(self, texts: Sequence[str]) -> list[dict[str, np.ndarray]]:
        """The graph's inputs for each text alone (what a static variant calibrates on)."""
        encodings = self._tokenizer.encode_batch(list(texts))
        return [self._feed(encodings, [i]) for i in range(len(texts))]

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 64,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """Encode texts to an ``(n, dim)`` float32 array of unit vectors (the same call as
        :meth:`core.encoding.registry.Encoder.encode`)."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._session is None:
            raise RuntimeError("This OnnxEncoder was opened without its model.")
        # Batches of similar length: little padding, which int8 activation scales would see.
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        v = np.zeros((len(texts), self.dim), dtype=np.float32)
        urgent = len(texts) <= batch_size
        start = 0
        while start < len(order):
            size = self._chunk(encodings, order, start, batch_size)
            idx = order[start : start + size]
            feeds = self._feed(encodings, idx)
            with self._turn(urgent=urgent), self._lock:
                began = time.perf_counter()
                (vecs,) = self._session.run(["sentence_embedding"], feeds)
                if self._costs is not None:
                    width = len(encodings[idx[-1]].ids)
                    self._costs.observe(len(idx) * width, time.perf_counter() - began)
            v[idx] = np.asarray(vecs, dtype=np.float32)
            start += len(idx)
            if progress is not None:
                progress(start, len(texts))
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(v, dtype=np.float32)
