"""Model bundles: one versioned ``.zip`` that predicts without the app.

A bundle holds the encoder (nothing for the frozen base, ``encoder/`` safetensors for a fully tuned
model, ``adapter/`` plus the base encoder's name for an adapter), the exemplar pool (texts, labels
and their vectors), the label map, thresholds, config, metrics, a generated model card and the
sha256 of every file. Loading needs only torch, sentence-transformers, numpy and faiss
(onnxruntime for the optional int8 encoder) and never executes code from the bundle: see
:mod:`core.bundle.safety`.

Layout::

    manifest.json         bundle_format, project, model_version, method, base_encoder, config, ...
    README.md             model card
    labels.json           {"labels": [...], "counts": {...}}
    exemplars.jsonl       {"text": ..., "labels": [...]} per line
    vectors.npy           float32 (n, dim), the pool in the model's space
    model.json, encoder/  kind "full"   (or model.json, adapter/ for kind "adapter")
    onnx/, head/          optional

Predictions use :class:`core.retrieval.knn.KnnIndex` over the stored vectors, so they equal the app's k-NN
rule for the same model version; the pool is never re-encoded.

Example:
    >>> from core.bundle.reader import load
    >>> predictor = load("banking.zip")  # doctest: +SKIP
    >>> predictor.predict(["I lost my card"])[0]["top"]  # doctest: +SKIP
    'lost_or_stolen_card'
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import os
import shutil
import uuid
import weakref
import zipfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from core.bundle.safety import (
    ALLOWED_SUFFIXES,
    PICKLE_SUFFIXES,
    BundleError,
    check_encoder_folder,
    extract_zip,
    verify_files,
)
from core.retrieval.knn import KnnIndex, Neighbour, Prediction
from core.safe_archive import MAX_UNCOMPRESSED_BYTES, safe_member_name, sha256_file

logger = logging.getLogger(__name__)

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
ONNX_MODEL = "onnx/model.int8.onnx"
_STORED = (".safetensors", ".onnx")  # already dense: stored, not deflated
_COMPUTED_KEYS = frozenset(
    {"bundle_format", "files", "base_encoder", "encoder_kind", "n_exemplars", "dim", "intents"}
)
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)

__all__ = [
    "BUNDLE_FORMAT",
    "BundleContents",
    "BundleError",
    "Predictor",
    "load",
    "model_card",
    "open_bundle",
    "prediction_to_dict",
    "write_bundle",
]


class TextEncoder(Protocol):
    """What the predictor needs of an encoder (:class:`core.encoding.registry.Encoder` or ONNX)."""

    name: str

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


# --------------------------------------------------------------------------------------- writing


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
) -> Path:
    """Write a bundle zip (to a temporary name, renamed when complete).

    Args:
        out_zip: the ``.zip`` to create (replaced if it exists).
        encoder_dir: ``None`` for the frozen base encoder; a model version folder from
            ``core.training`` (``model.json`` + ``encoder/`` or ``adapter/``); or a plain
            sentence-transformers folder (saved with safetensors).
        base_encoder: registry name (e.g. ``"minilm"``) of the base encoder.
        exemplar_texts: the labelled pool.
        exemplar_labels: a tuple of intent names per text.
        vectors: ``(n, dim)`` float32 pool vectors from this model version.
        manifest_fields: ``project``, ``model_version``, ``method``, ``config``, ``metrics``,
            ``base_metrics``, ``dataset_hash``, ``multi_label``, ``thresholds``, ``k``, ... kept as
            given (JSON-serialisable).
        extra_files: archive path -> file or folder, e.g. ``{"onnx": onnx_dir, "head": head_dir}``.

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
            "multi_label": any(len(lab) > 1 for lab in labels),
            "thresholds": {},
            "k": 1,
        }
    )
    manifest.update(dict(manifest_fields))
    kind, sources = _encoder_files(encoder_dir)
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
    onnx_cfg = next((p for k, p in sources.items() if k == "onnx/onnx_config.json"), None)
    if onnx_cfg is not None:
        manifest["onnx"] = json.loads(onnx_cfg.read_text("utf-8"))

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


def model_card(manifest: Mapping[str, Any]) -> str:
    """The bundle's ``README.md``: what it predicts, intents with counts, metrics, how to load it.

    Example:
        >>> "## Intents" in model_card({"project": "demo", "intents": {"greet": 3}})
        True
    """
    project = manifest.get("project") or "an Intent Studio project"
    version = manifest.get("model_version")
    title = f"# Intent model: {project}" + (f" (version {version})" if version is not None else "")
    intents: Mapping[str, int] = manifest.get("intents", {})
    kind = manifest.get("encoder_kind", "base")
    encoder = {
        "base": f"the frozen base encoder `{manifest.get('base_encoder')}` (no weights inside)",
        "full": f"a fully tuned encoder (from `{manifest.get('base_encoder')}`), safetensors",
        "adapter": f"an adapter over the base encoder `{manifest.get('base_encoder')}`",
    }.get(str(kind), str(kind))
    lines = [
        title,
        "",
        f"Predicts the intent of a user utterance among {len(intents)} intents"
        + (" (multi-label: several intents may apply)" if manifest.get("multi_label") else "")
        + f", by k-nearest neighbours (k={manifest.get('k', 1)}) over "
        f"{manifest.get('n_exemplars', sum(intents.values()))} labelled examples, in the space of "
        f"{encoder}. Method: `{manifest.get('method') or 'n/a'}`. Every prediction is explained by "
        "the labelled examples closest to it.",
        "",
        f"Created {manifest.get('created_at', '')}; dataset hash `{manifest.get('dataset_hash') or 'n/a'}`.",
        "",
        "## How to load it",
        "",
        "```python",
        "from core.bundle.reader import load",
        'predictor = load("bundle.zip")',
        'print(predictor.predict(["I lost my card"])[0]["top"])',
        "```",
        "",
        'Or from a shell: `intent-studio predict --bundle bundle.zip "I lost my card"`.',
        "",
    ]
    metrics: Mapping[str, Any] = manifest.get("metrics") or {}
    base: Mapping[str, Any] = manifest.get("base_metrics") or {}
    if metrics:
        lines += ["## Metrics", "", "| metric | this model | frozen base |", "| --- | --- | --- |"]
        for key, value in metrics.items():
            lines.append(f"| {key} | {_fmt(value)} | {_fmt(base.get(key))} |")
        lines.append("")
    onnx = manifest.get("onnx")
    if isinstance(onnx, Mapping):
        lines += [
            "## Compact encoder",
            "",
            f"An int8 ONNX encoder is included (`{ONNX_MODEL}`); its top-1 agreement with the fp32 "
            f"model was {_fmt(onnx.get('parity_top1'))} on {onnx.get('parity_n', '?')} texts. "
            "Use it with `load(path, prefer_onnx=True)`.",
            "",
        ]
    lines += ["## Intents", "", "| intent | examples |", "| --- | --- |"]
    lines += [f"| {name} | {count} |" for name, count in sorted(intents.items())]
    lines.append("")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "–" if value is None else str(value)


# --------------------------------------------------------------------------------------- reading


@dataclass
class BundleContents:
    """A verified, extracted bundle (no encoder loaded yet).

    ``root`` is a private temporary folder, removed by :meth:`cleanup` (or when garbage collected).
    """

    root: Path
    manifest: dict[str, Any]
    texts: list[str]
    labels: list[tuple[str, ...]]
    vectors: np.ndarray
    _finalizer: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.root), True)

    def cleanup(self) -> None:
        self._finalizer()

    @property
    def has_onnx(self) -> bool:
        return (self.root / ONNX_MODEL).is_file()


def open_bundle(path: str | Path, *, max_bytes: int = MAX_UNCOMPRESSED_BYTES) -> BundleContents:
    """Extract ``path`` into a fresh temporary folder and verify it.

    Raises:
        BundleError: not a zip, manifest missing or unreadable, unknown ``bundle_format``, a file
            missing or unlisted, a hash mismatch, or a hostile archive.

    Example:
        >>> contents = open_bundle("bundle.zip")  # doctest: +SKIP
        >>> contents.manifest["project"], len(contents.texts)  # doctest: +SKIP
        ('banking', 770)
    """
    path = Path(path)
    if not path.is_file():
        raise BundleError(f"No bundle at {path}.")
    root = extract_zip(path, max_bytes=max_bytes)
    try:
        manifest = _read_manifest(root)
        verify_files(root, manifest["files"], ignore=[MANIFEST])
        texts, labels = _read_exemplars(root / "exemplars.jsonl")
        try:
            vectors = np.load(root / "vectors.npy", allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise BundleError(f"vectors.npy is not a plain numeric array: {exc}") from exc
        if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise BundleError(
                f"vectors.npy should be float32 ({len(texts)}, dim); got {vectors.dtype} {vectors.shape}."
            )
        if not np.isfinite(vectors).all():
            raise BundleError("vectors.npy holds NaN or infinity.")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return BundleContents(root, manifest, texts, labels, np.ascontiguousarray(vectors))


def _read_manifest(root: Path) -> dict[str, Any]:
    path = root / MANIFEST
    if not path.is_file():
        raise BundleError("Not an Intent Studio bundle: manifest.json is missing.")
    try:
        manifest = json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"manifest.json is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict):
        raise BundleError("manifest.json should hold a JSON object.")
    fmt = manifest.get("bundle_format")
    if fmt != BUNDLE_FORMAT:
        raise BundleError(
            f"Unknown bundle_format {fmt!r}: this runtime reads format {BUNDLE_FORMAT}. "
            "Upgrade intent-studio to load it."
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise BundleError("manifest.json has no valid 'files' checksum table.")
    for required in ("exemplars.jsonl", "vectors.npy", "labels.json"):
        if required not in files:
            raise BundleError(f"manifest.json does not list {required!r}.")
    if manifest.get("encoder_kind") not in ("base", "full", "adapter"):
        raise BundleError(
            f"Unknown encoder_kind {manifest.get('encoder_kind')!r} in manifest.json."
        )
    return manifest


def _read_exemplars(path: Path) -> tuple[list[str], list[tuple[str, ...]]]:
    texts: list[str] = []
    labels: list[tuple[str, ...]] = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                text, labs = row["text"], row["labels"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise BundleError(f"exemplars.jsonl line {n} is malformed: {exc}") from exc
            if not isinstance(text, str) or not isinstance(labs, list):
                raise BundleError(
                    f"exemplars.jsonl line {n}: text must be a string, labels a list."
                )
            texts.append(text)
            labels.append(tuple(sorted(str(x) for x in labs)))
    return texts, labels


def _load_encoder(contents: BundleContents, device: str | None) -> TextEncoder:
    manifest, root = contents.manifest, contents.root
    kind = manifest["encoder_kind"]
    if kind == "base":
        from core.encoding.registry import load_encoder

        try:
            return load_encoder(str(manifest["base_encoder"]), device=device)
        except ValueError as exc:
            raise BundleError(f"This bundle needs the base encoder: {exc}") from exc
    sub = root / ("encoder" if kind == "full" else "adapter")
    if not sub.is_dir():
        raise BundleError(f"Bundle of kind {kind!r} has no {sub.name}/ folder.")
    if kind == "full":
        check_encoder_folder(sub)
    elif any(p.suffix.lower() in PICKLE_SUFFIXES for p in sub.rglob("*")):
        raise BundleError("Adapter folder holds pickled weights; refusing.")
    if (root / "model.json").is_file():  # a model version saved by core.training
        try:
            from core.training import load_trained
        except ImportError as exc:
            raise BundleError(f"Loading a {kind} bundle needs core.training: {exc}") from exc
        try:
            return load_trained(root, device=device)
        except ValueError as exc:
            raise BundleError(f"Cannot load the bundle's encoder: {exc}") from exc
    if kind == "adapter":
        raise BundleError("An adapter bundle needs model.json naming its base encoder.")
    from core.encoding.registry import encoder_from_model, load_sentence_transformer

    weights = sorted(
        k for k in manifest["files"] if k.startswith("encoder/") and k.endswith(".safetensors")
    )
    fingerprint = "bundle@" + "".join(manifest["files"][k][:8] for k in weights)[:16]
    model = load_sentence_transformer(sub, device)
    return encoder_from_model(model, f"bundle:{manifest.get('project', '')}", fingerprint)


def load(
    path: str | Path,
    *,
    device: str | None = None,
    prefer_onnx: bool = False,
    onnx_threads: int | None = None,
    max_bytes: int = MAX_UNCOMPRESSED_BYTES,
) -> Predictor:
    """Load a bundle for prediction.

    Args:
        path: the bundle ``.zip``.
        device: torch device for the encoder (default: CUDA if available, else CPU).
        prefer_onnx: use the bundle's int8 ONNX encoder when it has one (torch is then not loaded).
        onnx_threads: intra-op threads for onnxruntime.
        max_bytes: refuse archives that expand beyond this many bytes.

    Example:
        >>> p = load("bundle.zip", prefer_onnx=True)  # doctest: +SKIP
        >>> p.predict("block my card")[0]["labels"]  # doctest: +SKIP
        ['card_block']
    """
    contents = open_bundle(path, max_bytes=max_bytes)
    try:
        encoder: TextEncoder | None = None
        if prefer_onnx and contents.has_onnx:
            try:
                from core.bundle.onnx import OnnxEncoder

                encoder = OnnxEncoder(contents.root / "onnx", threads=onnx_threads)
            except ImportError as exc:
                logger.warning("onnxruntime unavailable (%s); using the torch encoder", exc)
        if encoder is None:
            encoder = _load_encoder(contents, device)
        if encoder.dim != contents.vectors.shape[1]:
            raise BundleError(
                f"Encoder dimension {encoder.dim} does not match the stored vectors "
                f"({contents.vectors.shape[1]})."
            )
    except BaseException:
        contents.cleanup()
        raise
    return Predictor(contents, encoder)


# ------------------------------------------------------------------------------------ predicting


def _neighbour_dict(n: Neighbour) -> dict[str, Any]:
    return {"id": n.id, "text": n.text, "labels": list(n.labels), "similarity": n.similarity}


def prediction_to_dict(
    text: str,
    pred: Prediction,
    *,
    multi_label: bool = False,
    thresholds: Mapping[str, float] | None = None,
    top_n: int = 5,
) -> dict[str, Any]:
    """The public JSON shape of one prediction (the runtime API and the app's API return it).

    ``labels`` is the decision: the top intent (single-label) or every intent whose score reaches
    its threshold (multi-label); a threshold comes from ``thresholds[intent]`` or
    ``thresholds["default"]``. With no threshold a single-label prediction always names its top.

    Example:
        >>> from core.retrieval.knn import IntentScore
        >>> best = Neighbour(0, "hi", ("greet",), 0.9)
        >>> prediction_to_dict("hello", Prediction([IntentScore("greet", 0.9, best)], [best]))["top"]
        'greet'
    """
    thresholds = thresholds or {}

    def threshold(intent: str) -> float:
        value = thresholds.get(intent, thresholds.get("default"))
        return (0.5 if multi_label else -math.inf) if value is None else float(value)

    if multi_label:
        labels = [s.intent for s in pred.intents if s.score >= threshold(s.intent)]
    else:
        labels = [pred.top] if pred.top is not None and pred.score >= threshold(pred.top) else []
    return {
        "text": text,
        "top": pred.top,
        "score": pred.score,
        "margin": pred.margin,
        "labels": labels,
        "intents": [
            {"intent": s.intent, "score": s.score, "best": _neighbour_dict(s.best)}
            for s in pred.intents[:top_n]
        ],
        "neighbours": [_neighbour_dict(n) for n in pred.neighbours],
    }


class Predictor:
    """k-NN intent prediction from a loaded bundle; explains each prediction by its neighbours."""

    def __init__(self, contents: BundleContents, encoder: TextEncoder) -> None:
        self.contents = contents
        self.manifest: dict[str, Any] = contents.manifest
        self.encoder = encoder
        self.index = KnnIndex(contents.vectors.shape[1])
        self.index.add(
            list(range(len(contents.texts))), contents.vectors, contents.texts, contents.labels
        )
        self.labels: list[str] = sorted({name for lab in contents.labels for name in lab})
        self.k = int(self.manifest.get("k") or 1)
        self.head: Any = None
        if (contents.root / "head" / "head.json").is_file():  # multi-label MLP head
            from core.multilabel.head import load_head

            try:
                self.head = load_head(contents.root / "head")
            except (ValueError, KeyError, FileNotFoundError) as exc:
                raise BundleError(f"The bundle's multi-label head cannot be loaded: {exc}") from exc

    @property
    def root(self) -> Path:
        return self.contents.root

    def predict(
        self, texts: str | Sequence[str], k: int | None = None, *, show: int = 5, top_n: int = 5
    ) -> list[dict[str, Any]]:
        """Predict intents for ``texts`` (a string or a list), one dict per text.

        Each dict: ``text``, ``top``, ``score``, ``margin``, ``labels`` (the decision; with a
        multi-label ``head/`` it is the head's, and ``probabilities`` maps intent -> p),
        ``intents`` (ranked, each with the ``best`` neighbour behind its score) and
        ``neighbours`` (the ``show`` nearest examples: ``text``, ``labels``, ``similarity``).

        Example:
            >>> predictor.predict(["freeze my card"], k=1)[0]["intents"][0]["intent"]  # doctest: +SKIP
            'card_block'
        """
        batch = [texts] if isinstance(texts, str) else list(texts)
        if not batch:
            return []
        vecs = self.encoder.encode(batch)
        preds = self.index.classify(vecs, k=k or self.k, show=show)
        out = [
            prediction_to_dict(
                text,
                pred,
                multi_label=bool(self.manifest.get("multi_label")),
                thresholds=self.manifest.get("thresholds") or {},
                top_n=top_n,
            )
            for text, pred in zip(batch, preds, strict=True)
        ]
        if self.head is not None:  # the head decides the label set; k-NN still explains it
            from core.multilabel.head import decide

            proba = self.head.predict_proba(vecs)
            decided = decide(proba, self.head.intents, self.head.thresholds)
            for row, p, labels in zip(out, proba, decided, strict=True):
                row["labels"] = list(labels)
                row["probabilities"] = {
                    name: float(v) for name, v in zip(self.head.intents, p, strict=True)
                }
        return out

    def close(self) -> None:
        """Remove the extracted files (the encoder already in memory keeps working)."""
        self.contents.cleanup()

    def __enter__(self) -> Predictor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
