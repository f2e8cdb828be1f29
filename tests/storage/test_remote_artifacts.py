"""Model files in an S3-compatible bucket (moto's server on loopback): a version is visible only
once committed, arrives intact on another machine (its own cache), and a failed or interrupted
write leaves nothing a reader could take for a model."""

from __future__ import annotations

import pytest

from storage.artifacts import tree_sha256
from storage.remote_artifacts import MARKER, RemoteArtifactStore, open_artifacts

REL = "projects/1/models/a"


@pytest.fixture
def bucket(s3, monkeypatch):
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    return s3.new_bucket()


def _store(bucket: str, cache, **kw) -> RemoteArtifactStore:
    store = open_artifacts(f"s3://{bucket}/models", cache_dir=cache)
    assert isinstance(store, RemoteArtifactStore)
    if kw:
        store = RemoteArtifactStore(f"s3://{bucket}/models", cache_dir=cache, **kw)
    return store


def _fill(folder) -> None:
    (folder / "weights.bin").write_bytes(b"\x01" * 1000)
    (folder / "head").mkdir()
    (folder / "head" / "meta.json").write_text('{"k": 3}')


def test_a_committed_version_is_read_intact_on_another_machine(s3, bucket, tmp_path):
    app_box = _store(bucket, tmp_path / "app")
    with app_box.writing(REL) as tmp:
        _fill(tmp)
        assert not app_box.verify(REL, "x") and app_box._committed(REL) is None
    sha, size = tree_sha256(app_box.path(REL))
    assert size == 1008 and app_box.verify(REL, sha)
    assert s3.keys(bucket) == [
        f"models/{REL}/{MARKER}",
        f"models/{REL}/head/meta.json",
        f"models/{REL}/weights.bin",
    ]  # no temporary key left
    gpu_box = _store(bucket, tmp_path / "gpu")  # another cache: it downloads
    local = gpu_box.path(REL)
    assert local.is_relative_to(tmp_path / "gpu")
    assert tree_sha256(local) == (sha, size)
    assert (local / "head" / "meta.json").read_text() == '{"k": 3}'


def test_a_failed_write_leaves_nothing_in_the_bucket_or_the_cache(s3, bucket, tmp_path):
    store = _store(bucket, tmp_path / "c")
    with pytest.raises(RuntimeError, match="out of memory"), store.writing(REL) as tmp:
        _fill(tmp)
        raise RuntimeError("out of memory")
    assert s3.keys(bucket) == []
    assert not store.path(REL).exists()
    assert list((store.root / ".tmp").iterdir()) == []


def test_files_without_the_commit_marker_are_invisible(s3, bucket, tmp_path):
    """A writer killed while copying leaves files but no marker: nobody reads them as a model."""
    store = _store(bucket, tmp_path / "c")
    with store.writing(REL) as tmp:
        _fill(tmp)
    sha, _ = tree_sha256(store.path(REL))
    store.fs.rm(store._key(REL, MARKER))
    other = _store(bucket, tmp_path / "other")
    assert not other.verify(REL, sha)
    assert not other.path(REL).exists()


def test_an_existing_version_is_never_overwritten(s3, bucket, tmp_path):
    store = _store(bucket, tmp_path / "c")
    with store.writing(REL) as tmp:
        (tmp / "a").write_text("first")
    with pytest.raises(FileExistsError, match="already exists"), store.writing(REL):
        pass
    assert (_store(bucket, tmp_path / "d").path(REL) / "a").read_text() == "first"


def test_a_changed_object_is_refused_on_download(s3, bucket, tmp_path):
    store = _store(bucket, tmp_path / "c")
    with store.writing(REL) as tmp:
        _fill(tmp)
    store.fs.pipe_file(store._key(REL, "weights.bin"), b"\x02" * 1000)
    other = _store(bucket, tmp_path / "d")
    with pytest.raises(OSError, match="does not match its recorded hash"):
        other.path(REL)
    assert not (other.root / REL).exists()
    assert list((other.root / ".tmp").iterdir()) == []


def test_remove_uncommits_and_deletes_the_files(s3, bucket, tmp_path):
    store = _store(bucket, tmp_path / "c")
    with store.writing(REL) as tmp:
        _fill(tmp)
    sha, _ = tree_sha256(store.path(REL))
    store.remove(REL)
    assert s3.keys(bucket) == [] and not store.verify(REL, sha)
    assert not store.path(REL).exists()


def test_sweep_removes_stale_temporary_keys_but_spares_young_ones(s3, bucket, tmp_path):
    store = _store(bucket, tmp_path / "c")
    store.fs.pipe_file(f"{store.base}/.tmp/abc/weights.bin", b"half")
    assert store.sweep() == 0  # young: maybe another machine's upload in progress
    assert s3.keys(bucket) == ["models/.tmp/abc/weights.bin"]
    assert store.sweep(older_than=-1.0) == 1
    assert s3.keys(bucket) == []


HANG_MID_COPY = """
import pathlib, sys, time
from storage.remote_artifacts import RemoteArtifactStore

store = RemoteArtifactStore(sys.argv[1], cache_dir=sys.argv[2])
copy = store.fs.copy

def copy_then_hang(src, dst, **kw):
    copy(src, dst, **kw)
    pathlib.Path(sys.argv[3]).write_text("one file copied under the final name")
    time.sleep(600)

store.fs.copy = copy_then_hang
with store.writing("projects/1/models/b") as tmp:
    (tmp / "weights.bin").write_bytes(bytes(1000))
    (tmp / "head").mkdir()
    (tmp / "head" / "meta.json").write_text("{}")
"""


def test_a_writer_killed_mid_upload_leaves_what_the_sweep_removes(s3, bucket, tmp_path):
    """kill -9 while a version is copied under its name left temporary keys and uncommitted
    files that nothing ever removed. A sweep removes them once stale, spares them while young
    (a live upload elsewhere), and never touches a committed version."""
    import signal
    import subprocess
    import sys
    import time

    store = _store(bucket, tmp_path / "c")
    with store.writing(REL) as tmp:  # a committed version beside the dead write
        _fill(tmp)
    flag = tmp_path / "copying"
    proc = subprocess.Popen(
        [sys.executable, "-c", HANG_MID_COPY, f"s3://{bucket}/models", str(store.root), str(flag)]
    )
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the writer never copied"
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    left = [k for k in s3.keys(bucket) if not k.startswith(f"models/{REL}/")]
    assert "models/projects/1/models/b/.writing.json" in left
    assert any(k.startswith("models/.tmp/") for k in left)
    assert not _store(bucket, tmp_path / "reader").path("projects/1/models/b").exists()
    assert len(list((store.root / ".tmp").iterdir())) == 1  # its local temporary folder

    assert store.sweep() == 0  # within the grace period: could be a live upload
    assert store.sweep(older_than=-1.0) == 3  # local folder, temporary key, uncommitted copy
    assert s3.keys(bucket) == [
        f"models/{REL}/{MARKER}",
        f"models/{REL}/head/meta.json",
        f"models/{REL}/weights.bin",
    ]
    assert list((store.root / ".tmp").iterdir()) == []
