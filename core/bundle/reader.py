"""Reading a bundle: extract and verify it (:func:`open_bundle`), then :func:`load` it into the one
:class:`core.retrieval.predictor.Predictor` (stored vectors, never re-encoded; the multi-label head
when it has one). Loading never executes code from the bundle: see :mod:`core.bundle.safety`.

Example:
    >>> from core.bundle import load
    >>> with load("banking.zip") as predictor:  # doctest: +SKIP
    ...     predictor.predict(["I lost my card"])[0]["top"]
    'lost_or_stolen_card'
"""

from __future__ import annotations

import json
import logging
import shutil
import weakref
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.bundle.layout import BUNDLE_FORMAT, MANIFEST
from core.bundle.onnx_encoder import CONFIG_FILE
from core.bundle.safety import BundleError, check_vectors, extract_zip, read_json, verify_files
from core.bundle.weights import check_weights
from core.retrieval.factory import Anchors, PredictorFactory
from core.retrieval.knn import NEAREST
from core.retrieval.predictor import Predictor, TextEncoder
from core.safe_archive import MAX_UNCOMPRESSED_BYTES

logger = logging.getLogger(__name__)

# Where a bundle's ONNX encoder may be (core.bundle.writer).
ONNX_FOLDERS = ("onnx", "encoder")


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
    # the intents' anchors: (intent -> text, their vectors, weight), when the pool used them
    anchors: tuple[dict[str, str], np.ndarray, float] | None = None
    _finalizer: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.root), True)

    def cleanup(self) -> None:
        self._finalizer()

    @property
    def onnx_folder(self) -> Path | None:
        """The folder of the bundle's ONNX encoder (``onnx/``, or ``encoder/`` whose fp32 graph
        reads the safetensors beside it), or None."""
        meta = self.manifest.get("onnx")
        folder = meta.get("folder", "onnx") if isinstance(meta, dict) else "onnx"
        if folder not in ONNX_FOLDERS or not (self.root / folder / CONFIG_FILE).is_file():
            return None
        return self.root / folder

    @property
    def has_onnx(self) -> bool:
        return self.onnx_folder is not None


def open_bundle(
    path: str | Path, *, max_bytes: int = MAX_UNCOMPRESSED_BYTES, device: str | None = None
) -> BundleContents:
    """Extract ``path`` into a fresh temporary folder and verify it, weights included.

    The weights are checked against the base encoder (:func:`core.bundle.weights.check_weights`),
    which is loaded for that (on ``device``) when the bundle carries a tuned encoder or an adapter.

    Raises:
        BundleError: not a zip, manifest missing or unreadable, unknown ``bundle_format``, a file
            missing or unlisted, a hash mismatch, a hostile archive, a base encoder that is not a
            registry name, or weights that are malformed or not the base architecture's.

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
        check_vectors(vectors, len(texts), "vectors.npy")
        _check_counts(root, manifest, labels, vectors.shape[1])
        anchors = _read_anchors(root, manifest, vectors.shape[1])
        check_weights(root, manifest, device=device)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return BundleContents(root, manifest, texts, labels, np.ascontiguousarray(vectors), anchors)


def _read_anchors(
    root: Path, manifest: dict[str, Any], dim: int
) -> tuple[dict[str, str], np.ndarray, float] | None:
    """The bundle's anchors (manifest ``anchors`` and ``anchors.npy``), or None."""
    meta = manifest.get("anchors")
    if meta is None:
        return None
    texts = meta.get("texts") if isinstance(meta, dict) else None
    weight = meta.get("weight") if isinstance(meta, dict) else None
    if (
        not isinstance(texts, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in texts.items())
        or not isinstance(weight, int | float)
        or "anchors.npy" not in manifest["files"]
    ):
        raise BundleError("manifest.json 'anchors' should be {weight, texts} with anchors.npy.")
    try:
        vectors = np.load(root / "anchors.npy", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise BundleError(f"anchors.npy is not a plain numeric array: {exc}") from exc
    check_vectors(vectors, len(texts), "anchors.npy", dim)
    return dict(texts), np.ascontiguousarray(vectors), float(weight)


def _check_counts(
    root: Path, manifest: dict[str, Any], labels: list[tuple[str, ...]], dim: int
) -> None:
    """The manifest's ``n_exemplars``, ``dim`` and ``intents`` and ``labels.json`` must say what
    the files hold: a ghost label (listed, no exemplar) or an exemplar's label that is not listed
    would become an intent nobody exported.

    Raises:
        BundleError: naming the field and both values.
    """
    counts = Counter(name for lab in labels for name in lab)
    n_listed, dim_listed = manifest.get("n_exemplars"), manifest.get("dim")
    if n_listed != len(labels):
        raise BundleError(
            f"manifest.json says n_exemplars={n_listed!r}; exemplars.jsonl has {len(labels)}."
        )
    if dim_listed != dim:
        raise BundleError(f"manifest.json says dim={dim_listed!r}; vectors.npy has {dim}.")
    for where, listed in (
        ("manifest.json 'intents'", manifest.get("intents")),
        ("labels.json 'counts'", read_json(root / "labels.json", dict).get("counts")),
    ):
        if not isinstance(listed, dict):
            raise BundleError(f"{where} should map each intent to its number of exemplars.")
        ghosts = sorted(set(listed) - set(counts))
        unlisted = sorted(set(counts) - set(listed))
        if ghosts:
            raise BundleError(f"{where} lists intent(s) no exemplar has: {ghosts[:5]}.")
        if unlisted:
            raise BundleError(
                f"exemplars.jsonl has intent(s) {where} does not list: {unlisted[:5]}."
            )
        wrong = sorted(n for n in counts if listed[n] != counts[n])
        if wrong:
            n = wrong[0]
            raise BundleError(
                f"{where} says {n!r} has {listed[n]!r} exemplar(s); exemplars.jsonl has {counts[n]}."
            )
    label_list = read_json(root / "labels.json", dict).get("labels")
    if label_list != sorted(counts):
        raise BundleError("labels.json 'labels' should be the exemplars' intents, sorted.")


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
    if manifest.get("encoder_kind") not in ("base", "full", "adapter", "onnx"):
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
    """The encoder of a bundle that :func:`open_bundle` checked (registry base, sound weights)."""
    manifest, root = contents.manifest, contents.root
    kind = manifest["encoder_kind"]
    if kind == "base":
        from core.encoding.registry import load_encoder

        return load_encoder(str(manifest["base_encoder"]), device=device)
    if (root / "model.json").is_file():  # a model version saved by core.training
        try:
            from core.training import load_trained
        except ImportError as exc:
            raise BundleError(f"Loading a {kind} bundle needs core.training: {exc}") from exc
        try:
            return load_trained(root, device=device)
        except ValueError as exc:
            raise BundleError(f"Cannot load the bundle's encoder: {exc}") from exc
    from core.encoding.registry import encoder_from_model, load_sentence_transformer

    weights = sorted(
        k for k in manifest["files"] if k.startswith("encoder/") and k.endswith(".safetensors")
    )
    fingerprint = "bundle@" + "".join(manifest["files"][k][:8] for k in weights)[:16]
    model = load_sentence_transformer(root / "encoder", device)
    return encoder_from_model(model, f"bundle:{manifest.get('project', '')}", fingerprint)


class BundlePredictor(Predictor):
    """The :class:`Predictor` of a loaded bundle (made by :meth:`of`), holding its extracted
    files (``manifest``, ``root``) until :meth:`close` (or the end of a ``with`` block)."""

    contents: BundleContents
    manifest: dict[str, Any]
    labels: list[str]  # the intents its examples carry, sorted

    @classmethod
    def of(cls, contents: BundleContents, encoder: TextEncoder) -> BundlePredictor:
        """The bundle's predictor: its examples, rule, ``k``, thresholds, anchors and head, made
        by the :class:`~core.retrieval.factory.PredictorFactory` the studio serves with."""
        manifest = contents.manifest
        head = None
        if (contents.root / "head" / "head.json").is_file():  # multi-label MLP head
            from core.multilabel.head import HEAD_DIR, load_head

            try:
                head = load_head(contents.root / HEAD_DIR)
            except (ValueError, KeyError, FileNotFoundError) as exc:
                raise BundleError(f"The bundle's multi-label head cannot be loaded: {exc}") from exc
        anchors = None
        if contents.anchors is not None:
            texts, vectors, weight = contents.anchors
            anchors = Anchors(texts, weight, vectors)
        factory = PredictorFactory(
            encoder,
            k=int(manifest.get("k") or 1),
            # a bundle written before the rule was recorded predicted by its nearest example
            rule=str(manifest.get("rule") or NEAREST),
            anchors=anchors,
            head=head,
            multi_label=bool(manifest.get("multi_label")),
            thresholds=manifest.get("thresholds") or {},
        )
        predictor = factory.build(
            contents.texts, contents.labels, vectors=contents.vectors, kind=cls
        )
        predictor.contents = contents
        predictor.manifest = manifest
        predictor.labels = sorted({name for lab in contents.labels for name in lab})
        return predictor

    @property
    def root(self) -> Path:
        return self.contents.root

    def close(self) -> None:
        """Remove the extracted files (the encoder already in memory keeps working)."""
        self.contents.cleanup()

    def __enter__(self) -> BundlePredictor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load(
    path: str | Path,
    *,
    device: str | None = None,
    prefer_onnx: bool = False,
    onnx_threads: int | None = None,
    max_bytes: int = MAX_UNCOMPRESSED_BYTES,
) -> BundlePredictor:
    """Load a bundle for prediction.

    Args:
        path: the bundle ``.zip``.
        device: torch device for the encoder (default: CUDA if available, else CPU).
        prefer_onnx: use the bundle's ONNX encoder (int8, or the fp32 graph of a bundle written
            without int8) when it has one: torch is then not loaded. A bundle whose encoder is
            ONNX only (an int8 bundle of a tuned version) always uses it.
        onnx_threads: intra-op threads for onnxruntime.
        max_bytes: refuse archives that expand beyond this many bytes.

    Example:
        >>> p = load("bundle.zip", prefer_onnx=True)  # doctest: +SKIP
        >>> p.predict("block my card")[0]["labels"]  # doctest: +SKIP
        ['card_block']
    """
    contents = open_bundle(path, max_bytes=max_bytes, device=device)
    try:
        encoder: TextEncoder | None = None
        folder = contents.onnx_folder
        only = contents.manifest["encoder_kind"] == "onnx"  # no torch weights travel
        if only and folder is None:
            raise BundleError("This bundle's encoder is ONNX only, but it has no ONNX folder.")
        if folder is not None and (prefer_onnx or only):
            try:
                from core.bundle.onnx_encoder import OnnxEncoder

                encoder = OnnxEncoder(folder, threads=onnx_threads)
            except ImportError as exc:
                if only:
                    raise BundleError(f"This bundle's encoder needs onnxruntime: {exc}") from exc
                logger.warning("onnxruntime unavailable (%s); using the torch encoder", exc)
        if encoder is None:
            encoder = _load_encoder(contents, device)
        if encoder.dim != contents.vectors.shape[1]:
            raise BundleError(
                f"Encoder dimension {encoder.dim} does not match the stored vectors "
                f"({contents.vectors.shape[1]})."
            )
        return BundlePredictor.of(contents, encoder)
    except BaseException:
        contents.cleanup()
        raise
