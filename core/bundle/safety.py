"""Safe extraction and checking of model bundles: nothing from a bundle is ever executed.

A bundle is untrusted input. Before a single byte is written, every zip member is checked: no
``..``, no absolute or drive paths, no symlinks, no duplicate names, only data file types (JSON,
safetensors, ``.npy``, ONNX, text), a cap on the number of members, on the total uncompressed size
and on the compression ratio (zip bombs). Extraction streams each member into a fresh temporary
directory and counts the real bytes, so lying size headers do not help either. After extraction
every file's sha256 is compared with the manifest.

Example:
    >>> import zipfile, io
    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as zf:
    ...     zf.writestr("../evil.json", "{}")
    >>> try:
    ...     check_members(zipfile.ZipFile(buf).infolist())
    ... except BundleError as e:
    ...     print("refused")
    refused
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

logger = logging.getLogger(__name__)

MAX_UNCOMPRESSED_BYTES = 2 * 1024**3
MAX_MEMBERS = 10_000
# A member may expand at most this many times its compressed size (once it is over MIN_RATIO_BYTES).
MAX_COMPRESSION_RATIO = 200
MIN_RATIO_BYTES = 1 << 20
# Data only: no pickles (.bin/.pt/.pkl), no code (.py/.so).
ALLOWED_SUFFIXES = frozenset(
    {".json", ".jsonl", ".safetensors", ".npy", ".onnx", ".txt", ".md", ".model", ".csv"}
)
PICKLE_SUFFIXES = frozenset({".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib"})
# Sentence-transformers modules a bundle may name in modules.json (they are imported by name).
ALLOWED_MODULE_PREFIX = "sentence_transformers."


class BundleError(ValueError):
    """A bundle that cannot be used: malformed, tampered, hostile or of an unknown format."""


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def safe_member_name(name: str) -> str:
    """The member name if it is a plain relative POSIX path inside the archive, else BundleError."""
    if not name or "\\" in name or "\x00" in name:
        raise BundleError(f"Refusing zip member {name!r}: invalid characters in the path.")
    p = PurePosixPath(name)
    if p.is_absolute() or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise BundleError(f"Refusing zip member {name!r}: absolute path.")
    if any(part == ".." for part in p.parts):
        raise BundleError(f"Refusing zip member {name!r}: '..' in the path.")
    if any(part in ("", ".") for part in name.rstrip("/").split("/")):
        raise BundleError(f"Refusing zip member {name!r}: empty or '.' path component.")
    return name


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    return info.create_system == 3 and stat.S_ISLNK(mode)


def check_members(
    infos: Sequence[zipfile.ZipInfo],
    *,
    max_bytes: int = MAX_UNCOMPRESSED_BYTES,
    max_members: int = MAX_MEMBERS,
    allowed_suffixes: frozenset[str] | None = ALLOWED_SUFFIXES,
) -> None:
    """Refuse a hostile or unusable archive before anything is extracted.

    Args:
        infos: ``ZipFile.infolist()``.
        max_bytes: limit on the total declared uncompressed size.
        max_members: limit on the number of members.
        allowed_suffixes: file types allowed (``None``: any).

    Raises:
        BundleError: naming the first offending member.
    """
    if len(infos) > max_members:
        raise BundleError(f"Refusing archive: {len(infos)} members (limit {max_members}).")
    total = 0
    seen: set[str] = set()
    for info in infos:
        name = safe_member_name(info.filename)
        if _is_symlink(info):
            raise BundleError(f"Refusing zip member {name!r}: symbolic link.")
        if info.flag_bits & 0x1:
            raise BundleError(f"Refusing zip member {name!r}: encrypted.")
        key = name.rstrip("/")
        if key in seen:
            raise BundleError(f"Refusing archive: duplicate member {name!r}.")
        seen.add(key)
        if info.is_dir():
            continue
        suffix = PurePosixPath(name).suffix.lower()
        if suffix in PICKLE_SUFFIXES:
            raise BundleError(
                f"Refusing zip member {name!r}: pickled weights are never loaded; use safetensors."
            )
        if allowed_suffixes is not None and suffix not in allowed_suffixes:
            raise BundleError(f"Refusing zip member {name!r}: file type {suffix!r} not allowed.")
        total += info.file_size
        if total > max_bytes:
            raise BundleError(
                f"Refusing archive: uncompressed size exceeds the limit of {max_bytes} bytes "
                "(possible zip bomb)."
            )
        if info.file_size > MIN_RATIO_BYTES and info.file_size > MAX_COMPRESSION_RATIO * max(
            info.compress_size, 1
        ):
            raise BundleError(
                f"Refusing zip member {name!r}: compression ratio "
                f"{info.file_size / max(info.compress_size, 1):.0f}:1 (possible zip bomb)."
            )


def extract_zip(
    zip_path: Path,
    *,
    max_bytes: int = MAX_UNCOMPRESSED_BYTES,
    allowed_suffixes: frozenset[str] | None = ALLOWED_SUFFIXES,
) -> Path:
    """Extract a checked archive into a fresh temporary directory and return it.

    Members are streamed with a running byte count (headers can lie). On any error the
    directory is removed.

    Raises:
        BundleError: a hostile, corrupt or oversized archive.
    """
    try:
        zf = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(f"{zip_path} is not a readable zip file: {exc}") from exc
    root = Path(tempfile.mkdtemp(prefix="intent-bundle-"))
    try:
        with zf:
            infos = zf.infolist()
            check_members(infos, max_bytes=max_bytes, allowed_suffixes=allowed_suffixes)
            written = 0
            resolved_root = root.resolve()
            for info in infos:
                target = (root / info.filename).resolve()
                if resolved_root not in target.parents:
                    raise BundleError(f"Refusing zip member {info.filename!r}: escapes the folder.")
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("xb") as dst:
                    for chunk in iter(lambda src=src: src.read(1 << 20), b""):  # type: ignore[misc]
                        written += len(chunk)
                        if written > max_bytes:
                            raise BundleError(
                                "Refusing archive: uncompressed size exceeds the limit of "
                                f"{max_bytes} bytes (possible zip bomb)."
                            )
                        dst.write(chunk)
    except BundleError:
        shutil.rmtree(root, ignore_errors=True)
        raise
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise BundleError(f"{zip_path} is corrupt: {exc}") from exc
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return root


def verify_files(root: Path, files: dict[str, str], *, ignore: Sequence[str] = ()) -> None:
    """Check that ``root`` holds exactly ``files`` (relative path -> sha256) plus ``ignore``.

    Raises:
        BundleError: a missing file, an unlisted file or a hash mismatch (tampering).
    """
    present = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    for rel, digest in sorted(files.items()):
        safe_member_name(rel)
        if rel not in present:
            raise BundleError(f"Bundle is missing {rel!r}, listed in its manifest.")
        actual = sha256_file(root / rel)
        if actual != digest:
            raise BundleError(
                f"Bundle file {rel!r} has been modified: sha256 {actual[:12]}… does not match the "
                f"manifest's {str(digest)[:12]}…."
            )
    extra = sorted(present - set(files) - set(ignore))
    if extra:
        raise BundleError(f"Bundle holds files not listed in its manifest: {', '.join(extra)}.")


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
        for entry in _read_json(modules, list):
            kind = str(entry.get("type", "")) if isinstance(entry, dict) else ""
            if not kind.startswith(ALLOWED_MODULE_PREFIX):
                raise BundleError(
                    f"Encoder module type {kind!r} is not a sentence-transformers module; refusing."
                )
    for cfg in folder.rglob("*.json"):
        data = _read_json(cfg, object)
        if isinstance(data, dict) and "auto_map" in data:
            raise BundleError(f"{cfg.name} asks for remote code (auto_map); refusing.")
        act = data.get("activation_function") if isinstance(data, dict) else None
        if isinstance(act, str) and not act.startswith("torch."):
            raise BundleError(f"{cfg.name} names activation {act!r}, not a torch one; refusing.")


def _read_json(path: Path, kind: type) -> Any:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{path.name} is not valid JSON: {exc}") from exc
    if not isinstance(data, kind):
        raise BundleError(f"{path.name} should hold a JSON {kind.__name__}.")
    return data
