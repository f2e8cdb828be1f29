"""A tar with a manifest is verified while it streams: a member that the manifest does not list,
gives another size, or that takes the total past the cap is refused from its header, before a byte
of it lands on disk, and a hash mismatch stops the extraction at that member."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time
from pathlib import Path

import pytest

from core.safe_archive import ArchiveError
from core.safe_tar import Expected, extract_tar_verified

pytestmark = pytest.mark.fast

MiB = 1024**2


class _Zeros(io.RawIOBase):
    """``n`` zero bytes, read in chunks: a bomb's payload without holding it in memory."""

    def __init__(self, n: int) -> None:
        self.left = n

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k

    def readable(self) -> bool:
        return True


def _read_index(data: bytes) -> dict[str, Expected]:
    doc = json.loads(data)
    return {name: Expected(d, doc.get("sizes", {}).get(name)) for name, d in doc["files"].items()}


def _archive(path: Path, files: dict[str, bytes | int], index: dict[str, object]) -> Path:
    """A .tar.gz: ``MANIFEST.json`` first, then each file (bytes, or an int: that many zeros)."""
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        raw = json.dumps(index).encode()
        info = tarfile.TarInfo("MANIFEST.json")
        info.size = len(raw)
        tar.addfile(info, io.BytesIO(raw))
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            if isinstance(data, int):
                info.size = data
                tar.addfile(info, io.BufferedReader(_Zeros(data)))
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def _index(files: dict[str, bytes], sizes: bool = True) -> dict[str, object]:
    doc: dict[str, object] = {"files": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}}
    if sizes:
        doc["sizes"] = {n: len(d) for n, d in files.items()}
    return doc


def _extract(archive: Path, dest: Path, **kw):  # type: ignore[no-untyped-def]
    dest.mkdir(exist_ok=True)
    extract_tar_verified(archive, dest, index="MANIFEST.json", read_index=_read_index, **kw)


def _written(dest: Path) -> int:
    return sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())


GOOD = {"a.db": b"database", "models/w.bin": b"weights"}


def test_an_archive_that_matches_its_manifest_extracts(tmp_path):
    archive = _archive(tmp_path / "ok.tar.gz", dict(GOOD), _index(GOOD))
    _extract(archive, tmp_path / "out")
    assert (tmp_path / "out" / "models/w.bin").read_bytes() == b"weights"
    assert not (tmp_path / "out" / "MANIFEST.json").exists()


def test_a_gzip_bomb_is_refused_from_its_header_before_a_byte_is_written(tmp_path):
    # 256 MiB of zeros where the manifest says 8 bytes: about 1 MB of gzip.
    archive = _archive(tmp_path / "bomb.tar.gz", {"a.db": 256 * MiB}, _index(GOOD))
    assert archive.stat().st_size < 3 * MiB
    start = time.perf_counter()
    with pytest.raises(ArchiveError, match=r"a\.db in the archive is damaged: 268435456 bytes"):
        _extract(archive, tmp_path / "out")
    assert time.perf_counter() - start < 10  # bounded: the bomb is refused, not expanded
    assert _written(tmp_path / "out") == 0


def test_a_bomb_whose_manifest_agrees_is_stopped_by_the_total_cap(tmp_path):
    doc = _index(GOOD)
    doc["sizes"] = {"a.db": 256 * MiB}  # forged: the size agrees, the hash cannot
    archive = _archive(tmp_path / "bomb.tar.gz", {"a.db": 256 * MiB}, doc)
    start = time.perf_counter()
    with pytest.raises(ArchiveError, match="exceeds the limit of 67108864 bytes"):
        _extract(archive, tmp_path / "out", max_bytes=64 * MiB)
    assert time.perf_counter() - start < 10  # bounded: the bomb is refused, not expanded
    assert _written(tmp_path / "out") == 0


def test_without_sizes_in_the_manifest_the_cap_still_holds(tmp_path):
    archive = _archive(
        tmp_path / "bomb.tar.gz",
        {"a.db": b"database", "x.bin": 256 * MiB},
        _index(GOOD, sizes=False),
    )
    with pytest.raises(ArchiveError, match="exceeds the limit"):
        _extract(archive, tmp_path / "out", max_bytes=64 * MiB)
    assert _written(tmp_path / "out") <= len(b"database")


def test_a_hash_mismatch_stops_at_that_member(tmp_path):
    files: dict[str, bytes | int] = {"a.db": b"databasf", "models/w.bin": b"weights"}
    archive = _archive(tmp_path / "bad.tar.gz", files, _index(GOOD))
    with pytest.raises(ArchiveError, match=r"a\.db in the archive is damaged \(sha256 mismatch\)"):
        _extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "models").exists()  # never got that far


@pytest.mark.parametrize(
    ("files", "index", "message"),
    [
        (
            {"a.db": b"database", "models/w.bin": b"weights", "x": b"x"},
            _index(GOOD),
            "'x' is not listed",
        ),
        ({"a.db": b"database"}, _index(GOOD), "missing \\['models/w.bin'\\]"),
        ({"../a.db": b"database"}, _index(GOOD), "unsafe path"),
    ],
    ids=["unlisted", "missing", "traversal"],
)
def test_an_archive_that_differs_from_its_manifest_is_refused(tmp_path, files, index, message):
    with pytest.raises(ArchiveError, match=message):
        _extract(_archive(tmp_path / "bad.tar.gz", files, index), tmp_path / "out")
    assert not (tmp_path / "a.db").exists()


def test_the_manifest_must_come_first(tmp_path):
    path = tmp_path / "late.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("a.db")
        info.size = 8
        tar.addfile(info, io.BytesIO(b"database"))
    with pytest.raises(ArchiveError, match=r"MANIFEST\.json is not its first file"):
        _extract(path, tmp_path / "out")
    assert _written(tmp_path / "out") == 0


def test_junk_is_not_a_tar(tmp_path):
    (tmp_path / "junk.tar.gz").write_bytes(b"junk")
    with pytest.raises(ArchiveError, match="not a readable tar archive"):
        _extract(tmp_path / "junk.tar.gz", tmp_path / "out")
