"""The int8 quantisation recipes tried for the ONNX encoder, by name.

Each :class:`Variant` turns the traced fp32 graph into an int8 one with onnxruntime's
quantisation tools. They differ in what they quantise:

``dynamic-tensor``
    onnxruntime's dynamic quantisation: every MatMul with a constant weight (the attention score
    MatMuls, two activations, stay fp32) and the embedding table, one weight scale per tensor,
    activations quantised on the fly with one scale per tensor (so padding moves it).
``dynamic-channel``
    the same with one weight scale per output channel (the export's recipe until now).
``linear-keep``
    ``dynamic-channel`` with the attention output projections and the whole last layer kept
    fp32 (the layers most sensitive to rounding: they write straight into the residual / the
    pooled vector).
``ffn``
    only the feed-forward layers (intermediate and output dense) and the embedding table.
``static-qdq``
    static QDQ quantisation of the linear layers, activation ranges calibrated on the project's
    own utterances (the pool).
``blockwise-32``, ``blockwise-128``
    every linear layer as onnxruntime's ``MatMulNBits`` with 8-bit weights: one scale per block
    of 32 (128) weights of a column, activations quantised per block at run time
    (``accuracy_level`` 4); the embedding table int8 per tensor. Batch-independent (no scale
    sees the padding) and the most faithful of the fast recipes.
``blockwise-32-fp32``
    the same weights, computed in fp32 (``accuracy_level`` 0): int8 only on disk.

:data:`EXPORT_ORDER` is the order the export tries them in (fastest first); the first that passes
the parity bar is kept (see :func:`core.bundle.onnx.export_onnx`).

Example:
    >>> VARIANTS["blockwise-32"].block_size
    32
    >>> EXPORT_ORDER[0]
    'blockwise-32'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

# Two activations multiplied: scores = q k^T and context = softmax(scores) v.
_ATTENTION_SCORES = re.compile(r"/attention/self/MatMul(_1)?$")
_ATTENTION_OUT = re.compile(r"/attention/output/dense/")
_FFN = re.compile(r"/(intermediate|output)/dense/MatMul$")


@dataclass(frozen=True)
class Variant:
    """One quantisation recipe: which nodes become int8 and how."""

    name: str
    per_channel: bool = True
    op_types: tuple[str, ...] | None = None  # None: onnxruntime's default set
    keep: Callable[[str, int], bool] | None = None  # (node name, layers) -> stays fp32
    static: bool = False
    block_size: int = 0  # > 0: block-wise int8 weights (MatMulNBits), see :func:`blockwise_int8`
    accuracy_level: int = 4  # MatMulNBits: 4 = int8 activations per block, 0 = fp32 compute


def _is_scores(name: str, _layers: int) -> bool:
    return bool(_ATTENTION_SCORES.search(name))


def _layer(name: str) -> int | None:
    m = re.search(r"/layer\.(\d+)/", name)
    return int(m.group(1)) if m else None


def _keep_sensitive(name: str, layers: int) -> bool:
    return (
        _is_scores(name, layers)
        or bool(_ATTENTION_OUT.search(name))
        or (_layer(name) is not None and _layer(name) == layers - 1)
    )


def _keep_all_but_ffn(name: str, layers: int) -> bool:
    return not _FFN.search(name) and "MatMul" in name


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("dynamic-tensor", per_channel=False),
        Variant("dynamic-channel"),
        Variant("linear-keep", op_types=("MatMul", "Gather"), keep=_keep_sensitive),
        Variant("ffn", op_types=("MatMul", "Gather"), keep=_keep_all_but_ffn),
        Variant("static-qdq", op_types=("MatMul",), keep=_is_scores, static=True),
        Variant("blockwise-32", op_types=("Gather",), block_size=32),
        Variant("blockwise-128", op_types=("Gather",), block_size=128),
        Variant("blockwise-32-fp32", op_types=("Gather",), block_size=32, accuracy_level=0),
    )
}
# Measured by bench/int8.py: the dynamic recipes stay below 99 % top-1 agreement on BANKING77.
EXPORT_ORDER: tuple[str, ...] = ("blockwise-32", "blockwise-32-fp32")


def blockwise_int8(model: Any, *, block_size: int, accuracy_level: int) -> int:
    """Replace every MatMul by a constant weight with onnxruntime's ``MatMulNBits`` (8 bits):
    one symmetric scale per ``block_size`` weights of a column, not one per column or tensor, and
    with ``accuracy_level`` 4 the activations are quantised per block too, so an outlier in one
    hidden dimension no longer flattens all the others. Returns how many MatMuls were replaced.
    (What onnxruntime's ``MatMulNBitsQuantizer`` writes, without its ``onnx_ir`` dependency.)"""
    from onnx import helper, numpy_helper
    from onnxruntime.capi._pybind_state import quantize_matmul_8bits

    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    nodes, replaced = [], 0
    for node in graph.node:
        w = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if w is None or len(w.dims) != 2:
            nodes.append(node)
            continue
        b = numpy_helper.to_array(w).astype(np.float32)
        k, n = b.shape
        blocks = (k + block_size - 1) // block_size
        b = np.pad(b, ((0, blocks * block_size - k), (0, 0)))
        packed = np.zeros((n, blocks, block_size), dtype="uint8")
        scales = np.zeros((n, blocks), dtype=np.float32)
        zero = np.zeros((n, blocks), dtype="uint8")
        quantize_matmul_8bits(packed, b, scales, zero, block_size, n, k, True)
        q_name, s_name = f"{w.name}_Q8", f"{w.name}_scales"
        graph.initializer.extend(
            [numpy_helper.from_array(packed, q_name), numpy_helper.from_array(scales, s_name)]
        )
        extra: dict[str, Any] = {"accuracy_level": accuracy_level} if accuracy_level else {}
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [node.input[0], q_name, s_name],
                list(node.output),
                name=f"{node.name}_Q8",
                domain="com.microsoft",
                K=k,
                N=n,
                bits=8,
                block_size=block_size,
                **extra,
            )
        )
        replaced += 1
    used = {i for node in nodes for i in node.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return replaced


def excluded_nodes(model_path: Path, variant: Variant) -> list[str]:
    """Names of the nodes ``variant`` keeps in fp32."""
    import onnx

    if variant.keep is None:
        return []
    graph = onnx.load(str(model_path), load_external_data=False).graph
    names = [n.name for n in graph.node if n.op_type in ("MatMul", "Gather")]
    layers = 1 + max((x for x in map(_layer, names) if x is not None), default=-1)
    return [n for n in names if variant.keep(n, layers)]


class _PoolReader:
    """Calibration feeds for static quantisation: each text alone (no padding), as served."""

    def __init__(self, feeds: Sequence[dict[str, np.ndarray]]) -> None:
        self._it: Iterator[dict[str, np.ndarray]] = iter(feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)

    def rewind(self) -> None:  # pragma: no cover - onnxruntime calls it for some methods
        pass


def quantise(
    fp32: Path,
    out: Path,
    variant: Variant,
    *,
    calibration: Callable[[], Sequence[dict[str, np.ndarray]]] | None = None,
) -> None:
    """Write the int8 version of the ``fp32`` ONNX model to ``out`` with ``variant``'s recipe.

    ``calibration`` returns the feeds a static variant calibrates on (required for one)."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    if variant.block_size:
        import onnx

        model = onnx.load(str(fp32))
        blockwise_int8(model, block_size=variant.block_size, accuracy_level=variant.accuracy_level)
        fp32 = out.with_suffix(".blockwise.onnx")
        onnx.save(model, str(fp32))
        try:
            quantise(fp32, out, replace(variant, block_size=0))  # then the embedding table
        finally:
            fp32.unlink(missing_ok=True)
        return
    exclude = excluded_nodes(fp32, variant)
    kwargs: dict[str, Any] = {
        "per_channel": variant.per_channel,
        "weight_type": QuantType.QInt8,
        "nodes_to_exclude": exclude or None,
    }
    if variant.op_types is not None:
        kwargs["op_types_to_quantize"] = list(variant.op_types)
    if not variant.static:
        quantize_dynamic(str(fp32), str(out), **kwargs)
        return
    if calibration is None:
        raise ValueError(f"The {variant.name} variant needs calibration utterances.")
    quantize_static(
        str(fp32),
        str(out),
        _PoolReader(calibration()),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QInt8,
        extra_options={"ActivationSymmetric": True},
        **kwargs,
    )
