"""Generic checks for untrusted archives: nothing lands outside a fresh folder (zip here; tar in
:mod:`core.safe_tar`, on the same rules).

Every member is checked before a byte is extracted: a plain relative POSIX path (no ``..``, no
absolute or drive path, no backslash or NUL), no symbolic links or other special entries, no
duplicates, no encrypted zip members, a cap on the number of members, on the total uncompressed
size and, for zip, on each member's compression ratio (zip bombs). Zip members are streamed with a
running byte count, so lying size headers do not help either. :func:`diff_manifest` compares an
extracted folder with a ``{path: sha256}`` table.

What an archive may *hold* (file types, layout) is the caller's rule, passed as ``check_file``:
bundles (:mod:`core.bundle.safety`), zipped intent files (:mod:`app.formats.intent_files`) and
backups (:mod:`app.services.projects.backup`) each pass theirs.

Example:
    >>> import io, zipfile
    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as zf:
    ...     zf.writestr("../evil.txt", "x")
    >>> try:
    ...     read_zip(buf.getvalue())
    ... except ArchiveError as e:
    ...     print(e)
    Refusing archive member '../evil.txt': unsafe path ('..').
"""

from __future__ import annotations

import hashlib
import io
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

MAX_UNCOMPRESSED_BYTES = 2 * 1024**3
MAX_MEMBERS = 10_000
# A member may expand at most this many times its compressed size (once it is over MIN_RATIO_BYTES).
MAX_COMPRESSION_RATIO = 200
MIN_RATIO_BYTES = 1 << 20
_CHUNK = 1 << 20

FileCheck = Callable[[str], None]
"""A caller's rule for one file member's name: returns, or raises to refuse the archive."""


class ArchiveError(ValueError):
    """An archive refused as hostile, corrupt or over a limit; nothing was kept from it."""


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def safe_member_name(name: str) -> str:
    """The name if it is a plain relative POSIX path inside the archive, else ArchiveError.

    Example:
        >>> safe_member_name("encoder/1_Pooling/config.json")
        'encoder/1_Pooling/config.json'
    """

    def refuse(why: str) -> ArchiveError:
        return ArchiveError(f"Refusing archive member {name!r}: unsafe path ({why}).")

    if not name or "\\" in name or "\x00" in name:
        raise refuse("invalid characters")
    p = PurePosixPath(name)
    if p.is_absolute() or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise refuse("absolute path")
    if any(part == ".." for part in p.parts):
        raise refuse("'..'")
    if any(part in ("", ".") for part in name.rstrip("/").split("/")):
        raise refuse("empty or '.' component")
    return name


def _check_total(total: int, max_bytes: int | None) -> None:
    if max_bytes is not None and total > max_bytes:
        raise ArchiveError(
            f"Refusing archive: uncompressed size exceeds the limit of {max_bytes} bytes "
            "(possible zip bomb)."
        )


def _check_count(n: int, max_members: int | None) -> None:
    if max_members is not None and n > max_members:
        raise ArchiveError(f"Refusing archive: {n} members (limit {max_members}).")


def _is_zip_symlink(info: zipfile.ZipInfo) -> bool:
    return info.create_system == 3 and stat.S_ISLNK(info.external_attr >> 16)


def check_zip_members(
    infos: Sequence[zipfile.ZipInfo],
    *,
    max_bytes: int | None = MAX_UNCOMPRESSED_BYTES,
    max_members: int | None = MAX_MEMBERS,
    check_file: FileCheck | None = None,
) -> None:
    """Refuse a hostile zip before anything is extracted.

    Args:
        infos: ``ZipFile.infolist()``.
        max_bytes: limit on the total declared uncompressed size (None: none).
        max_members: limit on the number of members (None: none).
        check_file: the caller's rule for each file member's name (folders are not passed).

    Raises:
        ArchiveError: naming the first offending member (or what ``check_file`` raises).
    """
    _check_count(len(infos), max_members)
    total = 0
    seen: set[str] = set()
    for info in infos:
        name = safe_member_name(info.filename)
        if _is_zip_symlink(info):
            raise ArchiveError(f"Refusing archive member {name!r}: symbolic link.")
        if info.flag_bits & 0x1:
            raise ArchiveError(f"Refusing archive member {name!r}: encrypted.")
        key = name.rstrip("/")
        if key in seen:
            raise ArchiveError(f"Refusing archive: duplicate member {name!r}.")
        seen.add(key)
        if info.is_dir():
            continue
        if check_file is not None:
            check_file(name)
        total += info.file_size
        _check_total(total, max_bytes)
        if info.file_size > MIN_RATIO_BYTES and info.file_size > MAX_COMPRESSION_RATIO * max(
            info.compress_size, 1
        ):
            raise ArchiveError(
                f"Refusing archive member {name!r}: compression ratio "
                f"{info.file_size / max(info.compress_size, 1):.0f}:1 (possible zip bomb)."
            )


def _shown(source: Path | bytes) -> str:
    """The file as a message names it: its name as the person gave it, never the folder it
    was kept in (an upload's is the server's temporary one: issue 65, item 7).

    Example:
        >>> _shown(Path("/tmp/gradio/3f2a/my bundle.zip")), _shown(b"PK")
        ("'my bundle.zip'", 'The file')
    """
    return "The file" if isinstance(source, bytes) else repr(Path(source).name)


def _open_zip(source: Path | bytes) -> zipfile.ZipFile:
    what = _shown(source)
    try:
        return zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArchiveError(f"{what} is not a readable zip file: {exc}") from exc


def _copy_counted(src: IO[bytes], dst: IO[bytes], written: int, max_bytes: int | None) -> int:
    """Copy ``src`` to ``dst`` in chunks; the running total, refused past ``max_bytes``."""
    for chunk in iter(lambda: src.read(_CHUNK), b""):
        written += len(chunk)
        _check_total(written, max_bytes)
        dst.write(chunk)
    return written


def read_zip(
    source: Path | bytes,
    *,
    max_bytes: int | None = MAX_UNCOMPRESSED_BYTES,
    max_members: int | None = MAX_MEMBERS,
    check_file: FileCheck | None = None,
) -> dict[str, bytes]:
    """The checked files of a small zip in memory: ``{member name: bytes}`` (folders left out).

    Raises:
        ArchiveError: not a zip, corrupt, hostile or over a limit.
    """
    with _open_zip(source) as zf:
        infos = zf.infolist()
        check_zip_members(
            infos, max_bytes=max_bytes, max_members=max_members, check_file=check_file
        )
        files: dict[str, bytes] = {}
        written = 0
        try:
            for info in infos:
                if not info.is_dir():
                    buf = io.BytesIO()
                    with zf.open(info) as src:
                        written = _copy_counted(src, buf, written, max_bytes)
                    files[info.filename] = buf.getvalue()
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError) as exc:
            raise ArchiveError(f"The zip file is corrupt: {exc}") from exc
    return files


def extract_zip(
    zip_path: Path,
    *,
    max_bytes: int | None = MAX_UNCOMPRESSED_BYTES,
    max_members: int | None = MAX_MEMBERS,
    check_file: FileCheck | None = None,
    prefix: str = "intent-archive-",
) -> Path:
    """Extract a checked zip into a fresh temporary directory and return it.

    Members are streamed with a running byte count (headers can lie). On any error the
    directory is removed.

    Raises:
        ArchiveError: a hostile, corrupt or oversized archive (or what ``check_file`` raises).
    """
    zf = _open_zip(Path(zip_path))
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        with zf:
            infos = zf.infolist()
            check_zip_members(
                infos, max_bytes=max_bytes, max_members=max_members, check_file=check_file
            )
            written = 0
            resolved_root = root.resolve()
            for info in infos:
                target = (root / info.filename).resolve()
                if resolved_root not in target.parents:
                    raise ArchiveError(
                        f"Refusing archive member {info.filename!r}: escapes the folder."
                    )
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("xb") as dst:
                    written = _copy_counted(src, dst, written, max_bytes)
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise ArchiveError(f"{_shown(Path(zip_path))} is corrupt: {exc}") from exc
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return root


@dataclass(frozen=True)
class ManifestDiff:
    """How a folder differs from its ``{path: sha256}`` table; empty lists when it matches."""

    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    changed: dict[str, str] = field(default_factory=dict)  # path -> the sha256 found

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.changed)


def diff_manifest(
    root: Path, files: Mapping[str, str], *, ignore: Iterable[str] = ()
) -> ManifestDiff:
    """Compare the files under ``root`` with ``files`` (relative path -> sha256).

    Args:
        root: an extracted archive.
        files: the manifest's table; every name is checked with :func:`safe_member_name`.
        ignore: files present but not listed on purpose (the manifest itself).

    Raises:
        ArchiveError: a listed name that is not a safe relative path.
    """
    present = {p.relative_to(root).as_posix() for p in Path(root).rglob("*") if p.is_file()}
    missing, changed = [], {}
    for rel, digest in sorted(files.items()):
        safe_member_name(rel)
        if rel not in present:
            missing.append(rel)
        elif (actual := sha256_file(root / rel)) != digest:
            changed[rel] = actual
    extra = sorted(present - set(files) - set(ignore))
    return ManifestDiff(missing, extra, changed)
