"""Model bundles: one versioned ``.zip`` that predicts without the app.

A bundle holds the encoder once, the exemplar pool (texts, labels and their vectors), the label
map, thresholds, config, metrics, a generated model card, ``predict.py`` and the sha256 of every
file. The encoder: for the app (torch), nothing for the frozen base (a registry name),
``encoder/`` safetensors for a fully tuned model, ``adapter/`` for an adapter; and as an ONNX
graph for ``predict.py`` (onnxruntime, tokenizers, numpy): int8 in ``onnx/`` when int8 was asked
(then a tuned model carries no fp32 weights at all: ``encoder_kind`` ``"onnx"``), else fp32, in
``encoder/`` over the very safetensors bytes (:mod:`core.bundle.onnx_fp32`), or in ``onnx/``
with its weights inside for the frozen base and an adapter. Loading never executes code from
the bundle: see :mod:`core.bundle.safety`.

Layout::

    manifest.json         bundle_format, project, model_version, method, base_encoder, config,
                          rule, k, thresholds, anchors, onnx (its config and folder), files, ...
    README.md             model card: the decision rule in words, how to run predict.py
    predict.py            the standalone predictor (core.bundle.standalone)
    labels.json           {"labels": [...], "counts": {...}}
    exemplars.jsonl       {"text": ..., "labels": [...]} per line
    vectors.npy           float32 (n, dim), the pool in the model's space
    anchors.npy           optional float32 (intents, dim): the intents' anchors (manifest
                          ``anchors``: ``weight`` and ``texts``, intent -> description or name)
    model.json, encoder/  kind "full"   (or model.json, adapter/ for kind "adapter")
    onnx/, head/          the ONNX encoder (int8, or fp32 where encoder/ has none), the head

Predictions use :class:`core.retrieval.knn.KnnIndex` over the stored vectors, so they equal the
app's rule for the same model version; the pool is never re-encoded.

Example:
    >>> from core.bundle import load
    >>> predictor = load("banking.zip")  # doctest: +SKIP
    >>> predictor.predict(["I lost my card"])[0]["labels"]  # doctest: +SKIP
    ['lost_or_stolen_card']
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import uuid
import zipfile
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from core.bundle.card import model_card
from core.bundle.layout import BUNDLE_FORMAT, MANIFEST, PREDICT_PY
from core.bundle.onnx_encoder import CONFIG_FILE
from core.bundle.runtime import predict_py
from core.bundle.safety import ALLOWED_SUFFIXES, PICKLE_SUFFIXES, BundleError
from core.bundle.weights import base_encoder_name
from core.encoding.registry import LABEL_DIR
from core.multilabel.rule import is_multilabel
from core.retrieval.knn import DEFAULT_RULE
from core.safe_archive import safe_member_name, sha256_file

logger = logging.getLogger(__name__)

_STORED = (".safetensors", ".onnx")  # already dense: stored, not deflated
_COMPUTED_KEYS = frozenset(
    {"bundle_format", "files", "base_encoder", "encoder_kind", "n_exemplars", "dim", "intents"}
)
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def _encoder_files(encoder_dir: Path | None) -> tuple[str, dict[str, Path]]:
    """The encoder kind and the files (archive name -> source) that carry it."""
    if encoder_dir is None:
        return "base", {}
    encoder_dir = Path(encoder_dir)
    files: dict[str, Path] = {}
    model_json = encoder_dir / "model.json"
    if model_json.exists():  # a trained model version from core.training
        meta = json.loads(model_json.read_text("utf-8"))
        kind = meta.get("kind")
        if kind not in ("full", "adapter"):
            raise BundleError(f"{model_json}: unknown model kind {kind!r}.")
        sub = "encoder" if kind == "full" else "adapter"
        if not (encoder_dir / sub).is_dir():
            raise BundleError(f"{encoder_dir} has model.json of kind {kind!r} but no {sub}/.")
        files["model.json"] = model_json
        files.update(_tree(encoder_dir / sub, sub))
        if (encoder_dir / LABEL_DIR).is_dir():  # a separate label encoder (non-siamese)
            files.update(_tree(encoder_dir / LABEL_DIR, LABEL_DIR))
        return str(kind), files
    if (encoder_dir / "modules.json").exists() or (encoder_dir / "config.json").exists():
        files.update(_tree(encoder_dir, "encoder"))  # a plain sentence-transformers folder
        return "full", files
    raise BundleError(
        f"{encoder_dir} is neither a model version nor a sentence-transformers folder."
    )


def _tree(folder: Path, prefix: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_symlink():
            raise BundleError(f"{p} is a symbolic link; bundles hold plain files only.")
        if not p.is_file() or any(part.startswith(".") for part in rel.split("/")):
            continue
        suffix = p.suffix.lower()
        if suffix in PICKLE_SUFFIXES:
            raise BundleError(f"{p} is pickled; save weights with safe_serialization=True.")
        if suffix not in ALLOWED_SUFFIXES:
            raise BundleError(f"{p}: file type {suffix!r} cannot go into a bundle.")
        out[f"{prefix}/{rel}"] = p
    return out


def _json_bytes(data: Any) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8")


def write_bundle(
    out_zip: Path,
    *,
    encoder_dir: Path | None,
    base_encoder: str,
    exemplar_texts: Sequence[str],
    exemplar_labels: Sequence[Sequence[str]],
    vectors: np.ndarray,
    manifest_fields: Mapping[str, Any],
    extra_files: Mapping[str, Path] | None = None,
    anchors: Mapping[str, str] | None = None,
    anchor_vectors: np.ndarray | None = None,
    anchor_weight: float = 0.0,
    onnx_only: bool = False,
) -> Path:
    """Write a bundle zip (to a temporary name, renamed when complete).

    Args:
        out_zip: the ``.zip`` to create (replaced if it exists).
        encoder_dir: ``None`` for the frozen base encoder; a model version folder from
            ``core.training`` (``model.json`` + ``encoder/`` or ``adapter/``); or a plain
            sentence-transformers folder (saved with safetensors).
        base_encoder: registry name (e.g. ``"minilm"``) of the base encoder; a path is refused
            (:class:`BundleError`), since a reader would have to load a folder of its host.
        exemplar_texts: the labelled pool.
        exemplar_labels: a tuple of intent names per text.
        vectors: ``(n, dim)`` float32 pool vectors from this model version.
        manifest_fields: ``project``, ``model_version``, ``method``, ``config``, ``metrics``,
            ``base_metrics``, ``dataset_hash``, ``multi_label``, ``thresholds``, ``k``, ... kept as
            given (JSON-serialisable).
        extra_files: archive path -> file or folder, e.g. ``{"onnx": onnx_dir, "head": head_dir}``.
        anchors: intent -> anchor text (:mod:`core.retrieval.anchors`) when the pool predicts
            with anchors; ``anchor_vectors`` ``(len(anchors), dim)`` in the same order, and
            ``anchor_weight`` (> 0) their weight.
        onnx_only: the encoder travels as its ONNX folder alone (``extra_files``' ``onnx``:
            an int8 bundle of a tuned version carries no fp32 weights); ``encoder_kind``
            ``"onnx"``, and ``encoder_dir`` must be None.

    A bundle with an ONNX folder (a folder of ``extra_files`` holding ``onnx_config.json``:
    ``onnx/``, or ``encoder/`` whose graph reads the safetensors beside it) records it in the
    manifest's ``onnx`` (its config and ``folder``) and carries ``predict.py``, which predicts
    with it without the app (:mod:`core.bundle.standalone`).

    Returns:
        ``out_zip``.

    Example:
        >>> write_bundle(Path("b.zip"), encoder_dir=None, base_encoder="minilm",
        ...              exemplar_texts=texts, exemplar_labels=labels, vectors=vecs,
        ...              manifest_fields={"project": "demo"})  # doctest: +SKIP
    """
    out_zip = Path(out_zip)
    texts = [str(t) for t in exemplar_texts]
    labels = [tuple(sorted(str(x) for x in lab)) for lab in exemplar_labels]
    vecs = np.ascontiguousarray(vectors, dtype=np.float32)
    if vecs.ndim != 2 or not (len(texts) == len(labels) == vecs.shape[0]):
        raise ValueError("exemplar_texts, exemplar_labels and vectors (n, dim) must have equal n")
    if len(texts) == 0:
        raise ValueError("A bundle needs at least one labelled exemplar.")
    if not np.isfinite(vecs).all():
        raise ValueError("vectors contain NaN or infinity")
    base_encoder_name(base_encoder)  # a bundle names a registry encoder, never a folder
    bad = _COMPUTED_KEYS & set(manifest_fields)
    if bad:
        raise ValueError(f"manifest_fields may not set {sorted(bad)}")

    manifest: dict[str, Any] = {"bundle_format": BUNDLE_FORMAT}
    manifest.update(
        {
            "project": "",
            "model_version": None,
            "method": "frozen" if encoder_dir is None else "",
            "base_encoder": base_encoder,
            "config": {},
            "metrics": {},
            "base_metrics": {},
            "dataset_hash": "",
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "multi_label": is_multilabel(labels),
            "thresholds": {},
            "k": 1,
            # the decision rule the pool predicts by (and its thresholds were calibrated for)
            "rule": DEFAULT_RULE,
        }
    )
    manifest.update(dict(manifest_fields))
    if onnx_only and encoder_dir is not None:
        raise ValueError("An ONNX-only bundle carries no encoder folder: give encoder_dir=None.")
    kind, sources = _encoder_files(encoder_dir)
    kind = "onnx" if onnx_only else kind
    counts = Counter(name for lab in labels for name in lab)
    manifest.update(
        {
            "encoder_kind": kind,
            "n_exemplars": len(texts),
            "dim": int(vecs.shape[1]),
            "intents": dict(sorted(counts.items())),
        }
    )
    for prefix, src in (extra_files or {}).items():
        prefix = safe_member_name(prefix.strip("/"))
        src = Path(src)
        if src.is_dir():
            sources.update(_tree(src, prefix))
        elif src.is_file():
            suffix = src.suffix.lower()
            if suffix not in ALLOWED_SUFFIXES or suffix != Path(prefix).suffix.lower():
                raise BundleError(f"{src}: cannot go into a bundle as {prefix!r}.")
            sources[prefix] = src
        else:
            raise FileNotFoundError(src)
    configs = {k.rpartition("/")[0]: p for k, p in sources.items() if k.endswith("/" + CONFIG_FILE)}
    if len(configs) > 1:
        raise BundleError(f"A bundle carries one ONNX encoder, not {sorted(configs)}.")
    for folder, config in configs.items():
        manifest["onnx"] = {**json.loads(config.read_text("utf-8")), "folder": folder}
    if onnx_only and "onnx" not in manifest:
        raise BundleError("An ONNX-only bundle needs its ONNX folder in extra_files.")

    generated: dict[str, bytes] = {
        "exemplars.jsonl": "".join(
            json.dumps({"text": t, "labels": list(lab)}, ensure_ascii=False) + "\n"
            for t, lab in zip(texts, labels, strict=True)
        ).encode("utf-8"),
        "labels.json": _json_bytes(
            {"labels": sorted(counts), "counts": dict(sorted(counts.items()))}
        ),
        "vectors.npy": _npy_bytes(vecs),
    }
    if anchors and anchor_weight:
        avecs = np.ascontiguousarray(anchor_vectors, dtype=np.float32)
        if avecs.shape != (len(anchors), vecs.shape[1]) or not np.isfinite(avecs).all():
            raise ValueError("anchor_vectors must be finite, one (dim,) row per anchor")
        manifest["anchors"] = {"weight": float(anchor_weight), "texts": dict(anchors)}
        generated["anchors.npy"] = _npy_bytes(avecs)
    if "onnx" in manifest:
        generated[PREDICT_PY] = predict_py().encode("utf-8")
    generated["README.md"] = model_card(manifest).encode("utf-8")
    clash = set(generated) & set(sources)
    if clash or MANIFEST in sources:
        raise BundleError(
            f"extra_files may not replace {sorted(clash | ({MANIFEST} & set(sources)))}"
        )

    files: dict[str, str] = {
        name: hashlib.sha256(data).hexdigest() for name, data in generated.items()
    }
    for name, src in sources.items():
        files[name] = sha256_file(src)
    manifest["files"] = dict(sorted(files.items()))

    out_zip.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_zip.with_name(f".{out_zip.name}.{uuid.uuid4().hex}.tmp")
    try:
        with zipfile.ZipFile(tmp, "w") as zf:
            _add(zf, MANIFEST, _json_bytes(manifest))
            for name, data in generated.items():
                _add(zf, name, data)
            for name, src in sorted(sources.items()):
                _add(zf, name, src.read_bytes())
        os.replace(tmp, out_zip)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    logger.info("wrote bundle %s (%d exemplars, kind %s)", out_zip, len(texts), kind)
    return out_zip


def _npy_bytes(vecs: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, vecs, allow_pickle=False)
    return buf.getvalue()


def _add(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.compress_type = zipfile.ZIP_STORED if name.endswith(_STORED) else zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)
