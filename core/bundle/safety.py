"""What a model bundle may hold: nothing from a bundle is ever executed (its ``predict.py`` is
for its user to run without the app; the app never runs or imports it).

The generic archive checks (member names, symlinks, counts, sizes, zip bombs, hashes) are
:mod:`core.safe_archive`'s; this module adds the bundle's own rules: only data file types (JSON,
safetensors, ``.npy``, ONNX, text), never pickled weights, an encoder folder that names only
sentence-transformers modules and asks for no remote code. Every refusal is a :class:`BundleError`.

Example:
    >>> check_bundle_file("encoder/model.safetensors")
    >>> try:
    ...     check_bundle_file("encoder/pytorch_model.bin")
    ... except BundleError as e:
    ...     print(e)
    Refusing zip member 'encoder/pytorch_model.bin': pickled weights are never loaded; use safetensors.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from core.bundle.layout import PREDICT_PY
from core.safe_archive import MAX_UNCOMPRESSED_BYTES, ArchiveError, diff_manifest
from core.safe_archive import extract_zip as extract_archive

logger = logging.getLogger(__name__)

# Data only: no pickles (.bin/.pt/.pkl), no code (.py/.so), but for the bundle's own
# ``predict.py`` at its root (core.bundle.layout.PREDICT_PY).
ALLOWED_SUFFIXES = frozenset(
    {".json", ".jsonl", ".safetensors", ".npy", ".onnx", ".txt", ".md", ".model", ".csv"}
)
PICKLE_SUFFIXES = frozenset({".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib"})
# Sentence-transformers modules a bundle may name in modules.json (they are imported by name).
ALLOWED_MODULE_PREFIX = "sentence_transformers."


# How far a stored vector's length may be from 1 (float32 encoders give ~1e-7; a half-precision
# round trip ~1e-3).
UNIT_NORM_TOLERANCE = 1e-2


class BundleError(ArchiveError):
    """A bundle that cannot be used: malformed, tampered, hostile or of an unknown format."""


@contextmanager
def _as_bundle_error() -> Iterator[None]:
    """Report a generic archive refusal as a BundleError (same message)."""
    try:
        yield
    except BundleError:
        raise
    except ArchiveError as exc:
        raise BundleError(str(exc)) from exc


def check_bundle_file(name: str) -> None:
    """Refuse a bundle member that is not a data file: pickles and code never load.

    Raises:
        BundleError: a pickled or not allowed file type.
    """
    if name == PREDICT_PY:  # the standalone predictor, for its user to run: never by the app
        return
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in PICKLE_SUFFIXES:
        raise BundleError(
            f"Refusing zip member {name!r}: pickled weights are never loaded; use safetensors."
        )
    if suffix not in ALLOWED_SUFFIXES:
        raise BundleError(f"Refusing zip member {name!r}: file type {suffix!r} not allowed.")


def extract_zip(zip_path: Path, *, max_bytes: int = MAX_UNCOMPRESSED_BYTES) -> Path:
    """Extract a checked bundle into a fresh ``intent-bundle-*`` temporary directory.

    Raises:
        BundleError: a hostile, corrupt or oversized archive, or a file type a bundle never holds.
    """
    with _as_bundle_error():
        return extract_archive(
            zip_path, max_bytes=max_bytes, check_file=check_bundle_file, prefix="intent-bundle-"
        )


def verify_files(root: Path, files: Mapping[str, str], *, ignore: Sequence[str] = ()) -> None:
    """Check that ``root`` holds exactly ``files`` (relative path -> sha256) plus ``ignore``.

    Raises:
        BundleError: a missing file, an unlisted file or a hash mismatch (tampering).
    """
    with _as_bundle_error():
        diff = diff_manifest(root, files, ignore=ignore)
    if diff.missing:
        raise BundleError(f"Bundle is missing {diff.missing[0]!r}, listed in its manifest.")
    for rel, actual in diff.changed.items():
        raise BundleError(
            f"Bundle file {rel!r} has been modified: sha256 {actual[:12]}… does not match the "
            f"manifest's {str(files[rel])[:12]}…."
        )
    if diff.extra:
        raise BundleError(
            f"Bundle holds files not listed in its manifest: {', '.join(diff.extra)}."
        )


def check_encoder_folder(folder: Path) -> None:
    """Refuse a sentence-transformers folder that could run code or unpickle on load.

    Checks that ``modules.json`` names only sentence-transformers' own modules, that
    ``config.json`` asks for no remote code (``auto_map``) and that weights are safetensors.
    """
    if any(p.suffix.lower() in PICKLE_SUFFIXES for p in folder.rglob("*")):
        raise BundleError(f"Encoder folder {folder.name!r} holds pickled weights; refusing.")
    if not any(folder.rglob("*.safetensors")):
        raise BundleError(f"Encoder folder {folder.name!r} has no safetensors weights.")
    modules = folder / "modules.json"
    if modules.exists():
        for entry in read_json(modules, list):
            kind = str(entry.get("type", "")) if isinstance(entry, dict) else ""
            if not kind.startswith(ALLOWED_MODULE_PREFIX):
                raise BundleError(
                    f"Encoder module type {kind!r} is not a sentence-transformers module; refusing."
                )
    for cfg in folder.rglob("*.json"):
        data = read_json(cfg, object)
        if isinstance(data, dict) and "auto_map" in data:
            raise BundleError(f"{cfg.name} asks for remote code (auto_map); refusing.")
        act = data.get("activation_function") if isinstance(data, dict) else None
        if isinstance(act, str) and not act.startswith("torch."):
            raise BundleError(f"{cfg.name} names activation {act!r}, not a torch one; refusing.")


def check_vectors(vectors: np.ndarray, rows: int, name: str, dim: int | None = None) -> None:
    """Refuse stored vectors that are not ``rows`` finite float32 unit vectors (of ``dim``).

    All-zero or huge vectors (1e30) pass a finiteness check but are no encoder's output: the
    index would hold zeros or overflow, and predict nonsense.

    Raises:
        BundleError: naming the file, the first bad row and its length.
    """
    want = f"({rows}, {dim if dim is not None else 'dim'})"
    if (
        vectors.dtype != np.float32
        or vectors.ndim != 2
        or vectors.shape[0] != rows
        or (dim is not None and vectors.shape[1] != dim)
    ):
        raise BundleError(f"{name} should be float32 {want}; got {vectors.dtype} {vectors.shape}.")
    if not np.isfinite(vectors).all():
        raise BundleError(f"{name} holds NaN or infinity.")
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > UNIT_NORM_TOLERANCE)
    if bad.size:
        raise BundleError(
            f"{name} should hold unit vectors (length 1 ± {UNIT_NORM_TOLERANCE}): {bad.size} "
            f"row(s) are not, the first row {int(bad[0])} has length {norms[bad[0]]:.3g}."
        )


def read_json(path: Path, kind: type) -> Any:
    """The JSON in ``path``, which must be of type ``kind``.

    Raises:
        BundleError: the file is missing, not UTF-8 JSON, or holds another type.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{path.name} is not valid JSON: {exc}") from exc
    if not isinstance(data, kind):
        raise BundleError(f"{path.name} should hold a JSON {kind.__name__}.")
    return data
