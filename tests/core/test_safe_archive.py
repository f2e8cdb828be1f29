"""Hostile archives are refused before a byte is written, and nothing lands outside the fresh folder."""

from __future__ import annotations

import hashlib
import io
import stat
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from core.safe_archive import (
    ArchiveError,
    diff_manifest,
    extract_zip,
    read_zip,
    safe_member_name,
    sha256_file,
)
from core.safe_tar import extract_tar

pytestmark = pytest.mark.fast


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _archive_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("intent-archive-*")}


def test_a_plain_zip_extracts_into_a_fresh_folder(tmp_path):
    root = extract_zip(_zip(tmp_path / "ok.zip", {"a/b.json": b"{}", "c.txt": b"hi"}))
    try:
        assert (root / "a/b.json").read_bytes() == b"{}" and (root / "c.txt").read_text() == "hi"
    finally:
        import shutil

        shutil.rmtree(root)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../../evil.json", "'..'"),
        ("encoder/../../evil.json", "'..'"),
        ("/tmp/evil.json", "absolute path"),
        ("C:/evil.json", "absolute path"),
        ("a\\..\\evil.json", "invalid characters"),
    ],
)
def test_path_traversal_is_refused(tmp_path, name, message):
    crafted = _zip(tmp_path / "p.zip", {"ok.json": b"{}", name: b"{}"})
    before = _archive_dirs()
    with pytest.raises(ArchiveError, match=message):
        extract_zip(crafted)
    with pytest.raises(ArchiveError, match=message):
        read_zip(crafted)
    assert _archive_dirs() == before  # the temporary folder was removed
    assert not (tmp_path / "evil.json").exists()
    assert not Path("/tmp/evil.json").exists()


def test_symlink_member_is_refused(tmp_path):
    crafted = _zip(tmp_path / "s.zip", {"ok.json": b"{}"})
    with zipfile.ZipFile(crafted, "a") as zf:
        info = zipfile.ZipInfo("link.json")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(ArchiveError, match="symbolic link"):
        extract_zip(crafted)


def test_zip_bomb_by_total_size(tmp_path):
    crafted = _zip(tmp_path / "t.zip", {"a.txt": b"x" * 60, "b.txt": b"x" * 60})
    with pytest.raises(ArchiveError, match="zip bomb"):
        extract_zip(crafted, max_bytes=100)
    with pytest.raises(ArchiveError, match="zip bomb"):
        read_zip(crafted, max_bytes=100)


def test_zip_bomb_by_ratio(tmp_path):
    crafted = _zip(tmp_path / "z.zip", {"bomb.txt": b"\0" * (8 << 20)})  # deflates ~1000:1
    with pytest.raises(ArchiveError, match="compression ratio"):
        extract_zip(crafted)


def test_member_count_and_duplicates_are_limited(tmp_path):
    crafted = _zip(tmp_path / "n.zip", {f"{i}.txt": b"x" for i in range(5)})
    with pytest.raises(ArchiveError, match="5 members"):
        read_zip(crafted, max_members=4)
    with zipfile.ZipFile(crafted, "a") as zf, pytest.warns(UserWarning, match="Duplicate"):
        zf.writestr("0.txt", b"again")
    with pytest.raises(ArchiveError, match="duplicate member"):
        read_zip(crafted)


def test_not_a_zip(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(ArchiveError, match="not a readable zip"):
        extract_zip(bad)
    with pytest.raises(ArchiveError, match="not a readable zip"):
        read_zip(b"not a zip at all")


def test_a_refusal_names_the_file_as_it_was_given_not_the_folder_it_was_kept_in(tmp_path):
    """Issue 65, item 7: a corrupt bundle's message led with the server's temporary path of the
    upload (/tmp/gradio/3f2a…/my bundle.zip); it names the file as the person uploaded it."""
    kept = tmp_path / "gradio" / "3f2a9c" / "my bundle.zip"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ArchiveError) as refused:
        extract_zip(kept)
    said = str(refused.value)
    assert said.startswith("'my bundle.zip' is not a readable zip file"), said
    assert str(tmp_path) not in said and "3f2a9c" not in said


def test_the_caller_rule_sees_each_file_and_refuses(tmp_path):
    crafted = _zip(tmp_path / "r.zip", {"dir/": b"", "a.txt": b"x", "b.py": b"import os"})
    seen: list[str] = []

    def only_text(name: str) -> None:
        seen.append(name)
        if not name.endswith(".txt"):
            raise ArchiveError(f"{name}: not text")

    before = _archive_dirs()
    with pytest.raises(ArchiveError, match=r"b\.py: not text"):
        extract_zip(crafted, check_file=only_text)
    assert seen == ["a.txt", "b.py"]  # folders are not passed
    assert _archive_dirs() == before


def test_safe_member_name_accepts_plain_paths():
    assert safe_member_name("encoder/1_Pooling/config.json") == "encoder/1_Pooling/config.json"
    with pytest.raises(ArchiveError):
        safe_member_name("encoder/./x.json")


def _tar(path: Path, members: list[tarfile.TarInfo], data: bytes = b"x") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            if m.isfile():
                m.size = len(data)
                tar.addfile(m, io.BytesIO(data))
            else:
                tar.addfile(m)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_a_plain_tar_extracts(tmp_path):
    archive = _tar(tmp_path / "ok.tar.gz", [_member("a/b.txt"), _member("c.txt")])
    dest = tmp_path / "dest"
    dest.mkdir()
    extract_tar(archive, dest)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*.txt")) == [
        "a/b.txt",
        "c.txt",
    ]


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_member("../escaped.txt"), "unsafe path"),
        (_member("/etc/evil.txt"), "absolute path"),
        (_member("link", tarfile.SYMTYPE, "/etc/passwd"), "not a plain file"),
        (_member("hard", tarfile.LNKTYPE, "c.txt"), "not a plain file"),
        (_member("dev", tarfile.CHRTYPE), "not a plain file"),
    ],
)
def test_hostile_tar_members_are_refused(tmp_path, member, message):
    archive = _tar(tmp_path / "bad.tar.gz", [_member("c.txt"), member])
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveError, match=message):
        extract_tar(archive, dest)
    assert not any(dest.iterdir())
    assert not (tmp_path / "escaped.txt").exists()


def test_tar_limits(tmp_path):
    archive = _tar(tmp_path / "big.tar.gz", [_member("a.txt"), _member("b.txt")], b"x" * 60)
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveError, match="exceeds the limit"):
        extract_tar(archive, dest, max_bytes=100)
    with pytest.raises(ArchiveError, match="2 members"):
        extract_tar(archive, dest, max_members=1)
    (tmp_path / "junk.tar.gz").write_bytes(b"junk")
    with pytest.raises(ArchiveError, match="not a readable tar"):
        extract_tar(tmp_path / "junk.tar.gz", dest)


def test_diff_manifest_finds_missing_extra_and_changed_files(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("tampered")
    (tmp_path / "extra.txt").write_text("e")
    (tmp_path / "manifest.json").write_text("{}")
    digest = hashlib.sha256(b"a").hexdigest()
    assert sha256_file(tmp_path / "a.txt") == digest
    files = {"a.txt": digest, "b.txt": hashlib.sha256(b"b").hexdigest(), "gone.txt": digest}
    diff = diff_manifest(tmp_path, files, ignore=["manifest.json"])
    assert diff.missing == ["gone.txt"] and diff.extra == ["extra.txt"]
    assert diff.changed == {"b.txt": hashlib.sha256(b"tampered").hexdigest()}
    assert not diff_manifest(
        tmp_path, {"a.txt": digest}, ignore=["b.txt", "extra.txt", "manifest.json"]
    )
    with pytest.raises(ArchiveError, match=r"'\.\.'"):
        diff_manifest(tmp_path, {"../a.txt": digest})
