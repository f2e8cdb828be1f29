"""Compact int8 ONNX export of a sentence encoder, with a k-NN parity check at export time.

The whole sentence-transformers pipeline after tokenisation (transformer, pooling, any dense
down-projection, normalisation) is traced into one ONNX graph, then quantised with onnxruntime's
dynamic int8 quantisation (per-channel weights). :class:`OnnxEncoder` runs it with only
``onnxruntime``, ``tokenizers`` and numpy, and has the same ``encode(texts)`` as
:class:`core.encoding.registry.Encoder`.

The export refuses (:class:`OnnxParityError`) unless the int8 model's top-1 k-NN prediction agrees
with the fp32 model's on at least ``min_agreement`` of the evaluation texts.

Folder layout (``onnx/`` inside a bundle): ``model.int8.onnx``, ``tokenizer.json``,
``tokenizer_config.json`` and ``onnx_config.json`` (inputs, max length, padding, dim, agreement).

Example:
    >>> enc = load_encoder("minilm")  # doctest: +SKIP
    >>> res = export_onnx(enc, Path("onnx"), pool_texts=texts, pool_labels=labels,
    ...                   eval_texts=test_texts)  # doctest: +SKIP
    >>> OnnxEncoder(res.folder).encode(["where is my card?"]).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.encoding.registry import Encoder
from core.retrieval.knn import KnnIndex

logger = logging.getLogger(__name__)

MODEL_FILE = "model.int8.onnx"
CONFIG_FILE = "onnx_config.json"
TOKENIZER_FILE = "tokenizer.json"
ONNX_FORMAT = 1
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


class OnnxParityError(RuntimeError):
    """The int8 model disagrees with the fp32 model too often; ``agreement`` is the measured rate."""

    def __init__(self, agreement: float, minimum: float, n: int) -> None:
        super().__init__(
            f"int8 ONNX export refused: top-1 k-NN agreement with the fp32 model is "
            f"{agreement:.2%} on {n} evaluation texts (needs at least {minimum:.0%})."
        )
        self.agreement = agreement
        self.minimum = minimum


@dataclass(frozen=True)
class OnnxExport:
    """Where an export went and what it measured."""

    folder: Path
    model_path: Path
    size_mb: float
    agreement: float
    n_eval: int


def _pipeline_module(encoder: Encoder, input_names: Sequence[str]) -> Any:
    """A ``torch.nn.Module`` from token tensors to the sentence embedding (pooling included)."""
    import torch

    st: Any = encoder.model
    modules = list(st)
    first = modules[0]
    auto_model: Any = getattr(first, "auto_model", None)
    if auto_model is None:
        raise ValueError(f"Cannot export {type(first).__name__}: expected a Transformer module.")
    rest = torch.nn.ModuleList(modules[1:])
    names = list(input_names)

    class Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = auto_model
            self.rest = rest

        def forward(self, *tensors: Any) -> Any:
            feats: dict[str, Any] = dict(zip(names, tensors, strict=True))
            out = auto_model(**feats, return_dict=True)
            feats["token_embeddings"] = out.last_hidden_state
            for module in self.rest:
                feats = module(feats)
            return feats["sentence_embedding"]

    return Pipeline().eval()


def _export_fp32(encoder: Encoder, path: Path, opset: int) -> tuple[list[str], dict[str, Any]]:
    import torch

    st: Any = encoder.model
    tokenizer = st[0].tokenizer
    sample = tokenizer(
        ["a short sample", "a slightly longer sample sentence for tracing"],
        padding=True,
        return_tensors="pt",
    )
    names = [n for n in INPUT_NAMES if n in sample]
    model = _pipeline_module(encoder, names).to("cpu")
    args = tuple(sample[n].to(torch.int64) for n in names)
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["sentence_embedding"] = {0: "batch"}
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            args,
            str(path),
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes=axes,
            opset_version=opset,
            dynamo=False,
        )
    pad_token = tokenizer.pad_token or "[PAD]"
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    config = {
        "format": ONNX_FORMAT,
        "inputs": names,
        "max_seq_length": int(st.max_seq_length or 128),
        "pad_token": pad_token,
        "pad_id": int(pad_id),
        "dim": encoder.dim,
        "source": encoder.name,
        "fingerprint": encoder.fingerprint,
    }
    return names, config


def quantised_export(encoder: Encoder, out_dir: Path, *, opset: int = 17) -> dict[str, Any]:
    """Write the int8 model, tokenizer and ``onnx_config.json`` into ``out_dir`` (no parity check).

    Returns:
        The ONNX config written.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="onnx-export-") as tmp:
        fp32 = Path(tmp) / "model.fp32.onnx"
        _, config = _export_fp32(encoder, fp32, opset)
        quantize_dynamic(
            str(fp32), str(out_dir / MODEL_FILE), per_channel=True, weight_type=QuantType.QInt8
        )
    st: Any = encoder.model
    st[0].tokenizer.save_pretrained(str(out_dir))
    if not (out_dir / TOKENIZER_FILE).exists():
        raise ValueError("The encoder's tokenizer has no fast tokenizer.json; cannot export.")
    (out_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
    return config


def export_onnx(
    encoder: Encoder,
    out_dir: Path,
    *,
    pool_texts: Sequence[str],
    pool_labels: Sequence[Sequence[str]],
    eval_texts: Sequence[str],
    pool_vectors: np.ndarray | None = None,
    min_agreement: float = 0.99,
    k: int = 1,
    opset: int = 17,
) -> OnnxExport:
    """Export ``encoder`` to an int8 ONNX folder and check k-NN parity with the fp32 model.

    Args:
        encoder: the fp32 encoder (any device; export runs on CPU).
        out_dir: folder to create (must not exist or be empty).
        pool_texts: the labelled exemplar pool the k-NN rule votes over.
        pool_labels: labels of each pool text.
        eval_texts: texts to compare top-1 predictions on (the project's evaluation split).
        pool_vectors: the fp32 pool vectors if already computed.
        min_agreement: refuse below this top-1 agreement.
        k: the k-NN rule's ``k``.
        opset: ONNX opset.

    Returns:
        An :class:`OnnxExport` with the size and measured agreement.

    Raises:
        OnnxParityError: agreement below ``min_agreement`` (``out_dir`` is then removed).
    """
    if not pool_texts or not eval_texts:
        raise ValueError("The parity check needs a non-empty pool and evaluation texts.")
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    model_path = out_dir / MODEL_FILE
    try:
        config = quantised_export(encoder, out_dir, opset=opset)
        onnx_enc = OnnxEncoder(out_dir)
        agreement = parity(
            encoder,
            onnx_enc,
            pool_texts=pool_texts,
            pool_labels=pool_labels,
            eval_texts=eval_texts,
            pool_vectors=pool_vectors,
            k=k,
        )
        logger.info(
            "int8 ONNX parity: %.4f top-1 agreement on %d texts", agreement, len(eval_texts)
        )
        if agreement < min_agreement:
            raise OnnxParityError(agreement, min_agreement, len(eval_texts))
        config["parity_top1"] = agreement
        config["parity_n"] = len(eval_texts)
        (out_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    size_mb = model_path.stat().st_size / 1e6
    return OnnxExport(out_dir, model_path, size_mb, agreement, len(eval_texts))


def parity(
    reference: Any,
    candidate: Any,
    *,
    pool_texts: Sequence[str],
    pool_labels: Sequence[Sequence[str]],
    eval_texts: Sequence[str],
    pool_vectors: np.ndarray | None = None,
    k: int = 1,
) -> float:
    """Share of ``eval_texts`` whose top-1 k-NN intent is the same with both encoders.

    Both query with the same pool vectors (the reference's), which is how a bundle runs: the
    exemplar vectors are stored once and only queries go through the int8 model.
    """
    vecs = reference.encode(list(pool_texts)) if pool_vectors is None else pool_vectors
    index = KnnIndex(vecs.shape[1])
    index.add(list(range(len(pool_texts))), vecs, list(pool_texts), [tuple(x) for x in pool_labels])
    ref = index.classify(reference.encode(list(eval_texts)), k=k, show=0)
    cand = index.classify(candidate.encode(list(eval_texts)), k=k, show=0)
    same = sum(a.top == b.top for a, b in zip(ref, cand, strict=True))
    return same / len(eval_texts)


class OnnxEncoder:
    """Runs an exported ONNX folder: tokenise, run the graph, L2-normalise.

    Example:
        >>> enc = OnnxEncoder(Path("bundle/onnx"), threads=2)  # doctest: +SKIP
        >>> enc.encode(["hello"]).dtype  # doctest: +SKIP
        dtype('float32')
    """

    def __init__(
        self, folder: Path, *, threads: int | None = None, allow_spinning: bool = True
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.folder = folder
        self.config: dict[str, Any] = json.loads((folder / CONFIG_FILE).read_text("utf-8"))
        if self.config.get("format") != ONNX_FORMAT:
            raise ValueError(f"Unknown ONNX folder format {self.config.get('format')!r}.")
        self.inputs: list[str] = list(self.config["inputs"])
        tok = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        tok.enable_truncation(max_length=int(self.config["max_seq_length"]))
        tok.no_padding()
        self._pad_id = int(self.config["pad_id"])
        self._tokenizer = tok
        opts = ort.SessionOptions()
        if not allow_spinning:  # kinder to a CPU shared with other processes
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads is not None:
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(folder / MODEL_FILE), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._lock = threading.Lock()
        self.name = f"{self.config.get('source', 'encoder')}+int8-onnx"
        self.fingerprint = f"{self.config.get('fingerprint', '')}+int8"

    @property
    def dim(self) -> int:
        return int(self.config["dim"])

    @property
    def device(self) -> str:
        return "cpu"

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Encode texts to an ``(n, dim)`` float32 array of unit vectors."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Batches of similar length: little padding, which int8 activation scales would see.
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        v = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            width = max(len(encodings[i].ids) for i in idx)
            arrays = {name: np.zeros((len(idx), width), dtype=np.int64) for name in INPUT_NAMES}
            arrays["input_ids"].fill(self._pad_id)
            for row, i in enumerate(idx):
                enc = encodings[i]
                n = len(enc.ids)
                arrays["input_ids"][row, :n] = enc.ids
                arrays["attention_mask"][row, :n] = enc.attention_mask
                arrays["token_type_ids"][row, :n] = enc.type_ids
            feeds = {name: arrays[name] for name in self.inputs}
            with self._lock:
                (vecs,) = self._session.run(["sentence_embedding"], feeds)
            v[idx] = np.asarray(vecs, dtype=np.float32)
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(v, dtype=np.float32)
