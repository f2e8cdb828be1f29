"""Untrusted tar archives (backups): the rules of :mod:`core.safe_archive` for tar members, and
an extraction that verifies a manifest while it streams.

:func:`extract_tar` checks every member before a byte is extracted (names, plain files and folders
only, counts, total size). :func:`extract_tar_verified` reads an archive once, as a stream: its
first file is a manifest of ``{path: sha256 (and size)}``, and every later member is refused from
its header (unlisted, another size, over the total cap) or stopped as soon as its bytes disagree
with the manifest, so a gzip bomb never fills the disk.
"""

from __future__ import annotations

import hashlib
import tarfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.safe_archive import (
    _CHUNK,
    MAX_MEMBERS,
    MAX_UNCOMPRESSED_BYTES,
    ArchiveError,
    FileCheck,
    _check_count,
    _check_total,
    safe_member_name,
)


def check_tar_members(
    members: Sequence[tarfile.TarInfo],
    *,
    max_bytes: int | None = MAX_UNCOMPRESSED_BYTES,
    max_members: int | None = MAX_MEMBERS,
    check_file: FileCheck | None = None,
) -> None:
    """Refuse a hostile tar before anything is extracted: the zip rules, and only plain files
    and folders (no links, devices or fifos). A tar member's size is what is read, so the
    declared total is the real one.

    Raises:
        ArchiveError: naming the first offending member (or what ``check_file`` raises).
    """
    _check_count(len(members), max_members)
    total = 0
    seen: set[str] = set()
    for m in members:
        total = _check_tar_member(m, seen, total, max_bytes, check_file)


def _check_tar_member(
    m: tarfile.TarInfo,
    seen: set[str],
    total: int,
    max_bytes: int | None,
    check_file: FileCheck | None,
) -> int:
    """One tar member against the rules (``seen`` grows); the new running total of sizes."""
    name = safe_member_name(m.name)
    if not (m.isfile() or m.isdir()):
        raise ArchiveError(f"Refusing archive member {name!r}: not a plain file or folder.")
    if name.rstrip("/") in seen:
        raise ArchiveError(f"Refusing archive: duplicate member {name!r}.")
    seen.add(name.rstrip("/"))
    if m.isdir():
        return total
    if check_file is not None:
        check_file(name)
    total += m.size
    _check_total(total, max_bytes)
    return total


def extract_tar(
    archive: Path,
    dest: Path,
    *,
    max_bytes: int | None = MAX_UNCOMPRESSED_BYTES,
    max_members: int | None = MAX_MEMBERS,
    check_file: FileCheck | None = None,
) -> None:
    """Extract a checked (optionally gzipped) tar into the existing folder ``dest``.

    The caller owns ``dest`` (a staging folder it removes on error).

    Raises:
        ArchiveError: not a tar, corrupt, hostile or over a limit (or what ``check_file`` raises).
    """
    try:
        tar = tarfile.open(archive, "r:*")  # noqa: SIM115 - closed by the with below
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{Path(archive).name} is not a readable tar archive: {exc}") from exc
    try:
        with tar:
            members = tar.getmembers()
            check_tar_members(
                members, max_bytes=max_bytes, max_members=max_members, check_file=check_file
            )
            tar.extractall(dest, filter="data")  # the standard library's own second fence
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ArchiveError(f"{Path(archive).name} is corrupt: {exc}") from exc


@dataclass(frozen=True)
class Expected:
    """What an archive's own manifest says of one file: its sha256 and, when known, its size."""

    sha256: str
    size: int | None = None


ReadIndex = Callable[[bytes], Mapping[str, Expected]]
"""A caller's reader of the manifest's bytes: ``{path: Expected}``, or raises to refuse."""

MAX_INDEX_BYTES = 64 * 1024**2


def extract_tar_verified(
    archive: Path,
    dest: Path,
    *,
    index: str,
    read_index: ReadIndex,
    max_bytes: int | None = MAX_UNCOMPRESSED_BYTES,
    max_members: int | None = MAX_MEMBERS,
    check_file: FileCheck | None = None,
) -> None:
    """Extract a (gzipped) tar whose first file ``index`` lists every other file with its sha256
    (and size), checking each member *while streaming*, in one pass over the archive.

    A member is refused from its header, before a byte of it is written, when it breaks the rules
    of :func:`check_tar_members`, is not in the index, declares another size than the index or
    takes the total past ``max_bytes``; its bytes are hashed as they are written and a mismatch
    stops the extraction at that member. So a gzip bomb costs at most one member of disk, and
    never more than ``max_bytes``. The caller owns ``dest`` and removes it on error (what was
    written so far is left there).

    Raises:
        ArchiveError: not a tar, corrupt, hostile, over a limit, or not matching its index (or
            what ``check_file`` or ``read_index`` raises).
    """
    name = Path(archive).name
    try:
        tar = tarfile.open(archive, "r|*")  # noqa: SIM115 - a stream: one pass, closed below
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{name} is not a readable tar archive: {exc}") from exc
    try:
        with tar:
            _stream_verified(tar, Path(dest), index, read_index, max_bytes, max_members, check_file)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise ArchiveError(f"{name} is corrupt: {exc}") from exc


def _stream_verified(
    tar: tarfile.TarFile,
    dest: Path,
    index: str,
    read_index: ReadIndex,
    max_bytes: int | None,
    max_members: int | None,
    check_file: FileCheck | None,
) -> None:
    table: Mapping[str, Expected] | None = None
    seen: set[str] = set()
    done: set[str] = set()
    total = count = 0
    for m in tar:
        count += 1
        _check_count(count, max_members)
        if table is None and m.name == index and m.isfile():
            if m.size > MAX_INDEX_BYTES:
                raise ArchiveError(f"Refusing archive: its {index} is {m.size} bytes.")
            seen.add(index)
            table = read_index(_read_member(tar, m))
            continue
        total = _check_tar_member(m, seen, total, max_bytes, check_file)
        if m.isdir():
            (dest / m.name).mkdir(parents=True, exist_ok=True)
            continue
        if table is None:
            raise ArchiveError(f"Refusing archive: {index} is not its first file.")
        want = table.get(m.name)
        if want is None:
            raise ArchiveError(
                f"The archive does not match its manifest: {m.name!r} is not listed."
            )
        if want.size is not None and want.size != m.size:
            raise ArchiveError(
                f"{m.name} in the archive is damaged: {m.size} bytes where its manifest says "
                f"{want.size}."
            )
        if _write_member(tar, m, dest / m.name) != want.sha256:
            raise ArchiveError(f"{m.name} in the archive is damaged (sha256 mismatch).")
        done.add(m.name)
    if table is None:
        raise ArchiveError(f"Refusing archive: it has no {index}.")
    if missing := sorted(set(table) - done):
        raise ArchiveError(f"The archive does not match its manifest: missing {missing}.")


def _read_member(tar: tarfile.TarFile, m: tarfile.TarInfo) -> bytes:
    src = tar.extractfile(m)
    assert src is not None  # a plain file
    return src.read()


def _write_member(tar: tarfile.TarFile, m: tarfile.TarInfo, target: Path) -> str:
    """Stream a member into a new file; the sha256 of what was written."""
    src = tar.extractfile(m)
    assert src is not None  # a plain file
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with src, target.open("xb") as dst:
        for chunk in iter(lambda: src.read(_CHUNK), b""):
            h.update(chunk)
            dst.write(chunk)
    return h.hexdigest()
