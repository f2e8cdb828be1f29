"""The embedding cache's shards in the model bucket: pushed under their own name (never half
an object under it), pulled only where missing, dropped after a compaction."""

from __future__ import annotations

import uuid

import fsspec
import pytest

from storage.vectors import BucketVectors


@pytest.fixture
def mirror():
    return BucketVectors(fsspec.filesystem("memory"), f"/bucket-{uuid.uuid4().hex[:8]}/models")


def test_a_pushed_shard_is_pulled_by_another_machine_and_nothing_else(mirror, tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    (here / "shard-1.npz").write_bytes(b"one")
    mirror.push("minilm@abc", here / "shard-1.npz")
    mirror.fs.pipe_file(f"{mirror.base}/vectors/minilm@abc/notes.txt", b"not a shard")
    mirror.pull("minilm@abc", there)
    assert sorted(p.name for p in there.iterdir()) == ["shard-1.npz"]
    assert (there / "shard-1.npz").read_bytes() == b"one"
    assert not mirror.fs.ls(f"{mirror.base}/.tmp", detail=False)  # the staging key is gone


def test_pull_keeps_what_is_already_here_and_an_unknown_folder_is_no_error(mirror, tmp_path):
    (tmp_path / "shard-1.npz").write_bytes(b"mine")
    mirror.push("fp", tmp_path / "shard-1.npz")
    (tmp_path / "shard-1.npz").write_bytes(b"local copy")
    mirror.pull("fp", tmp_path)
    assert (tmp_path / "shard-1.npz").read_bytes() == b"local copy"
    mirror.pull("never-used", tmp_path)


def test_dropped_shards_are_not_pulled_again(mirror, tmp_path):
    for name in ("shard-1.npz", "shard-2.npz"):
        (tmp_path / name).write_bytes(b"x")
        mirror.push("fp", tmp_path / name)
    mirror.drop("fp", ["shard-1.npz", "shard-9.npz"])
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    mirror.pull("fp", fresh)
    assert [p.name for p in fresh.iterdir()] == ["shard-2.npz"]


def test_a_folder_name_cannot_escape_the_vectors_prefix(mirror, tmp_path):
    with pytest.raises(ValueError, match="not a fingerprint folder"):
        mirror.pull("../projects", tmp_path)
