"""The fp32 encoder of a bundle as an ONNX graph, so a bundle without int8 runs without torch too
(its ``predict.py``: :mod:`core.bundle.standalone`).

The weights are carried once. A fully tuned encoder already travels as safetensors (``encoder/``,
which the app loads with torch): its graph, ``encoder/model.onnx`` (~0.2 MB), reads every weight
from those files' bytes (ONNX external data: a file, an offset, a length), so the bundle holds
no second copy. The frozen base and an adapter carry no full weights of their own: their graph
holds its weights inside (``onnx/model.onnx``, ~90 MB for MiniLM).

Example:
    >>> config = export_fp32(load_encoder("minilm"), Path("onnx"))  # doctest: +SKIP
    >>> OnnxEncoder(Path("onnx")).encode(["hello"]).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from core.bundle.onnx import _export_fp32
from core.bundle.onnx_encoder import CONFIG_FILE, TOKENIZER_FILE, OnnxEncoder
from core.encoding.registry import Encoder

GRAPH_FILE = "model.onnx"
# The graph must encode as the torch encoder does: checked on two texts at export.
CHECK_TEXTS = ("a short sample", "where is the parcel I ordered last week?")
MIN_COSINE = 0.9999


def export_fp32(
    encoder: Encoder, out_dir: Path, *, weights: Path | None = None, opset: int = 17
) -> dict[str, Any]:
    """Write ``encoder`` as an fp32 ONNX folder into ``out_dir`` (``model.onnx``,
    ``tokenizer.json``, ``onnx_config.json``) and return its config.

    Args:
        encoder: the fp32 encoder (what the bundle's vectors were encoded with).
        out_dir: an existing, empty folder.
        weights: the encoder's saved sentence-transformers folder (its safetensors): the graph
            reads each weight found there from its bytes, and belongs in that folder (the files
            it names are relative to it), whose ``tokenizer.json`` it uses (written to
            ``out_dir`` only when the folder has none); None: the weights go inside the graph.
        opset: ONNX opset of the trace.

    Raises:
        ValueError: the graph does not encode as ``encoder`` does (cosine below
            :data:`MIN_COSINE` on :data:`CHECK_TEXTS`).
    """
    import onnx

    out_dir = Path(out_dir)
    graph = out_dir / GRAPH_FILE
    _, config = _export_fp32(encoder, graph, opset, fold=weights is None)
    model = onnx.load(str(graph))
    linked = _link(model, weights) if weights is not None else 0
    onnx.save(model, str(graph))
    if weights is None or not (weights / TOKENIZER_FILE).is_file():
        st: Any = encoder.model
        st[0].tokenizer.save_pretrained(str(out_dir))
        for extra in out_dir.iterdir():  # the tokenizer's other files: tokenizer.json is enough
            if extra.name not in (GRAPH_FILE, TOKENIZER_FILE):
                extra.unlink()
    config = {**config, "model": GRAPH_FILE, "precision": "fp32", "linked_weights": linked}
    (out_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
    _check(encoder, out_dir, weights)
    return config


def _spans(folder: Path) -> dict[tuple[str, tuple[int, ...], str], tuple[str, int, int]]:
    """Every float32 tensor of the safetensors files under ``folder``, by (sha256 of its bytes,
    shape, dtype): its file (relative to ``folder``), offset and length in bytes."""
    out: dict[tuple[str, tuple[int, ...], str], tuple[str, int, int]] = {}
    for path in sorted(folder.rglob("*.safetensors")):
        raw = path.read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + n])
        header.pop("__metadata__", None)
        for info in header.values():
            if info["dtype"] != "F32":
                continue
            begin, end = info["data_offsets"]
            start = 8 + n + begin
            digest = hashlib.sha256(raw[start : 8 + n + end]).hexdigest()
            key = (digest, tuple(info["shape"]), "F32")
            out[key] = (path.relative_to(folder).as_posix(), start, end - begin)
    return out


def _link(model: Any, folder: Path) -> int:
    """Point each initializer whose bytes a safetensors file of ``folder`` holds at them (ONNX
    external data); the others stay inside the graph. Returns how many were linked."""
    from onnx import TensorProto, numpy_helper

    spans = _spans(folder)
    linked = 0
    for init in model.graph.initializer:
        if init.data_type != TensorProto.FLOAT:
            continue
        array = numpy_helper.to_array(init).astype("<f4", copy=False)
        key = (hashlib.sha256(array.tobytes()).hexdigest(), tuple(array.shape), "F32")
        if key not in spans:
            continue
        location, offset, length = spans[key]
        init.ClearField("raw_data")
        init.ClearField("float_data")
        init.data_location = TensorProto.EXTERNAL
        del init.external_data[:]
        for name, value in (("location", location), ("offset", offset), ("length", length)):
            entry = init.external_data.add()
            entry.key, entry.value = name, str(value)
        linked += 1
    return linked


def _check(encoder: Encoder, out_dir: Path, weights: Path | None) -> None:
    """Encode :data:`CHECK_TEXTS` with the graph (beside its weights) and with ``encoder``."""
    with tempfile.TemporaryDirectory(prefix="onnx-check-") as tmp:
        folder = out_dir
        if weights is not None:  # the graph reads its weights from files beside it
            folder = Path(tmp)
            for path in out_dir.iterdir():
                _place(path, folder / path.name)
            for path in [*weights.rglob("*.safetensors"), weights / TOKENIZER_FILE]:
                if path.is_file():
                    _place(path, folder / path.relative_to(weights))
        got = OnnxEncoder(folder, threads=1, allow_spinning=False).encode(list(CHECK_TEXTS))
    want = np.asarray(encoder.encode(list(CHECK_TEXTS)), dtype=np.float32)
    cosine = float((got * want).sum(axis=1).min())
    if cosine < MIN_COSINE:
        raise ValueError(f"The fp32 ONNX graph does not encode as the model (cosine {cosine:.6f}).")


def _place(src: Path, dest: Path) -> None:
    """``src`` at ``dest``: a hard link where the file system allows, else a copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)
