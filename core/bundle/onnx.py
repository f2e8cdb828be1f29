"""Compact int8 ONNX export of a sentence encoder, with a k-NN parity check at export time.

The whole sentence-transformers pipeline after tokenisation (transformer, pooling, any dense
down-projection, normalisation) is traced into one ONNX graph, then quantised to int8 with onnxruntime
(the recipes are in :mod:`core.bundle.quantise`; the first that passes parity is kept).
:class:`OnnxEncoder` (:mod:`core.bundle.onnx_encoder`) runs it with only
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

import contextlib
import json
import logging
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.bundle.onnx_encoder import (
    CONFIG_FILE,
    INPUT_NAMES,
    MODEL_FILE,
    ONNX_FORMAT,
    TOKENIZER_FILE,
    OnnxEncoder,
)
from core.bundle.quantise import EXPORT_ORDER, VARIANTS, quantise
from core.encoding.registry import Encoder
from core.retrieval.factory import PredictorFactory, VectorsOnly

logger = logging.getLogger(__name__)


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
    variant: str = ""


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


def _export_fp32(
    encoder: Encoder, path: Path, opset: int, *, fold: bool = True
) -> tuple[list[str], dict[str, Any]]:
    """Trace ``encoder`` into the fp32 ONNX graph ``path``; its inputs and ONNX config. ``fold``
    False keeps every weight as the model's own parameter (by name, untransposed), as
    :mod:`core.bundle.onnx_fp32` needs to read them from the safetensors files."""
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
            do_constant_folding=fold,
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


@contextlib.contextmanager
def traced(encoder: Encoder, *, opset: int = 17) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The encoder traced to a temporary fp32 ONNX file, and its ONNX config (removed after)."""
    with tempfile.TemporaryDirectory(prefix="onnx-export-") as tmp:
        fp32 = Path(tmp) / "model.fp32.onnx"
        _, config = _export_fp32(encoder, fp32, opset)
        yield fp32, config


def quantised_export(
    encoder: Encoder,
    out_dir: Path,
    *,
    opset: int = 17,
    variant: str = EXPORT_ORDER[0],
    calibration_texts: Sequence[str] = (),
    trace: tuple[Path, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write the int8 model (``variant``'s recipe, see :mod:`core.bundle.quantise`), tokenizer
    and ``onnx_config.json`` into ``out_dir`` (no parity check).

    Args:
        encoder: the fp32 encoder.
        out_dir: an existing folder.
        opset: ONNX opset of the trace.
        variant: a name in :data:`core.bundle.quantise.VARIANTS`.
        calibration_texts: utterances a static variant calibrates on (the pool).
        trace: an fp32 trace from :func:`traced` to reuse.

    Returns:
        The ONNX config written.
    """
    if variant not in VARIANTS:
        raise ValueError(f"Unknown int8 variant {variant!r}; choose one of {sorted(VARIANTS)}.")
    st: Any = encoder.model
    st[0].tokenizer.save_pretrained(str(out_dir))
    if not (out_dir / TOKENIZER_FILE).exists():
        raise ValueError("The encoder's tokenizer has no fast tokenizer.json; cannot export.")
    with contextlib.ExitStack() as stack:
        fp32, config = trace or stack.enter_context(traced(encoder, opset=opset))
        config = {**config, "variant": variant}
        (out_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")

        def calibration() -> list[dict[str, np.ndarray]]:
            if not calibration_texts:
                raise ValueError(f"The {variant} variant needs calibration utterances.")
            return OnnxEncoder(out_dir, load_model=False).feeds(calibration_texts)

        quantise(fp32, out_dir / MODEL_FILE, VARIANTS[variant], calibration=calibration)
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
    variants: Sequence[str] = EXPORT_ORDER,
    own_pool: bool = False,
    reference: Any | None = None,
    candidate: Any | None = None,
) -> OnnxExport:
    """Export ``encoder`` to an int8 ONNX folder and check k-NN parity with the fp32 model.

    The ``variants`` are tried in order (fastest first, see :mod:`core.bundle.quantise`); the
    first whose agreement reaches ``min_agreement`` is kept and recorded in ``onnx_config.json``
    (``variant``, ``parity_top1``, ``parity_n``, ``parity_pool`` and every variant ``tried``).

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
        variants: the quantisation recipes to try, in order.
        own_pool: the int8 model encodes the pool as well as the queries (live serving); else it
            queries the fp32 pool vectors (a bundle).
        reference: what encodes the fp32 side of the check (default ``encoder``; e.g. a
            cache in front of it).
        candidate: what encodes the int8 side, from the exported :class:`OnnxEncoder`
            (default: that encoder itself; e.g. a cache in front of it).

    Returns:
        An :class:`OnnxExport` with the size and measured agreement.

    Raises:
        OnnxParityError: no variant reached ``min_agreement`` (``out_dir`` is then removed); its
            ``agreement`` is the best one measured.
    """
    if not pool_texts or not eval_texts:
        raise ValueError("The parity check needs a non-empty pool and evaluation texts.")
    if not variants:
        raise ValueError("Give at least one int8 variant to try.")
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    model_path = out_dir / MODEL_FILE
    reference = encoder if reference is None else reference
    if pool_vectors is None:
        pool_vectors = reference.encode(list(pool_texts))
    tried: dict[str, float] = {}
    try:
        with traced(encoder, opset=opset) as trace:
            for name in variants:
                config = quantised_export(
                    encoder, out_dir, variant=name, calibration_texts=pool_texts, trace=trace
                )
                int8 = OnnxEncoder(out_dir, allow_spinning=False)
                agreement = parity(
                    reference,
                    candidate(int8) if candidate is not None else int8,
                    pool_texts=pool_texts,
                    pool_labels=pool_labels,
                    eval_texts=eval_texts,
                    pool_vectors=pool_vectors,
                    k=k,
                    own_pool=own_pool,
                )
                tried[name] = agreement
                logger.info(
                    "int8 ONNX %s: %.4f top-1 agreement on %d texts",
                    name,
                    agreement,
                    len(eval_texts),
                )
                if agreement >= min_agreement:
                    break
        if max(tried.values()) < min_agreement:
            raise OnnxParityError(max(tried.values()), min_agreement, len(eval_texts))
        config.update(
            parity_top1=agreement,
            parity_n=len(eval_texts),
            parity_pool="int8" if own_pool else "fp32",
            tried=tried,
        )
        (out_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    size_mb = model_path.stat().st_size / 1e6
    return OnnxExport(out_dir, model_path, size_mb, agreement, len(eval_texts), config["variant"])


def parity(
    reference: Any,
    candidate: Any,
    *,
    pool_texts: Sequence[str],
    pool_labels: Sequence[Sequence[str]],
    eval_texts: Sequence[str],
    pool_vectors: np.ndarray | None = None,
    k: int = 1,
    own_pool: bool = False,
) -> float:
    """Share of ``eval_texts`` whose top-1 k-NN intent is the same with both encoders.

    By default both query the same pool vectors (the reference's), which is how a bundle runs:
    the exemplar vectors are stored once and only queries go through the int8 model. With
    ``own_pool`` the candidate votes over its own vectors of the pool, as the live app does when
    it serves the int8 encoder.
    """
    vecs = reference.encode(list(pool_texts)) if pool_vectors is None else pool_vectors
    ref = _top1(vecs, pool_texts, pool_labels, reference.encode(list(eval_texts)), k)
    cand_pool = candidate.encode(list(pool_texts)) if own_pool else vecs
    cand = _top1(cand_pool, pool_texts, pool_labels, candidate.encode(list(eval_texts)), k)
    return sum(a == b for a, b in zip(ref, cand, strict=True)) / len(eval_texts)


def _top1(
    vecs: np.ndarray,
    texts: Sequence[str],
    labels: Sequence[Sequence[str]],
    queries: np.ndarray,
    k: int,
) -> list[str | None]:
    pool = PredictorFactory(VectorsOnly(vecs.shape[1]), k=k).build(texts, labels, vectors=vecs)
    return pool.tops(queries).intents
