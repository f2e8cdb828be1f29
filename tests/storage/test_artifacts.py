"""Model files under one directory: written under a temporary name and renamed when complete,
addressed by a relative path that cannot escape the directory, verified by a tree hash."""

from __future__ import annotations

import pytest

from storage.artifacts import ArtifactStore, tree_sha256


def test_a_complete_write_appears_under_its_name_and_verifies(tmp_path):
    store = ArtifactStore(tmp_path / "artifacts")
    with store.writing("projects/1/models/a") as tmp:
        (tmp / "weights.bin").write_bytes(b"\x00" * 10)
        (tmp / "sub").mkdir()
        (tmp / "sub" / "meta.json").write_text("{}")
        assert not store.path("projects/1/models/a").exists()  # not visible until complete
    sha, size = tree_sha256(store.path("projects/1/models/a"))
    assert size == 12
    assert store.verify("projects/1/models/a", sha)
    assert not store.verify("projects/1/models/a", "0" * 64)
    assert list((store.root / ".tmp").iterdir()) == []


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    store = ArtifactStore(tmp_path)
    with pytest.raises(RuntimeError, match="disk full"), store.writing("m") as tmp:
        (tmp / "half.bin").write_bytes(b"1")
        raise RuntimeError("disk full")
    assert not store.path("m").exists()
    assert list((store.root / ".tmp").iterdir()) == []


def test_an_existing_artifact_is_never_overwritten(tmp_path):
    store = ArtifactStore(tmp_path)
    with store.writing("m") as tmp:
        (tmp / "a").write_text("first")
    with pytest.raises(FileExistsError), store.writing("m"):
        pass
    assert (store.path("m") / "a").read_text() == "first"


@pytest.mark.parametrize("rel", ["../outside", "/etc", "a/../../b"])
def test_a_path_cannot_escape_the_artifact_directory(tmp_path, rel):
    store = ArtifactStore(tmp_path / "artifacts")
    with pytest.raises(ValueError, match="escapes"):
        store.path(rel)


def test_the_tree_hash_covers_names_as_well_as_contents(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
    (a / "x").write_text("same")
    (b / "y").write_text("same")
    assert tree_sha256(a)[0] != tree_sha256(b)[0]


def test_sweep_removes_crashed_writes_but_spares_live_ones(tmp_path):
    import os
    import time

    store = ArtifactStore(tmp_path)
    for name in ("dead", "live"):
        (store.root / ".tmp" / name / "encoder").mkdir(parents=True)
        (store.root / ".tmp" / name / "encoder" / "weights.bin").write_bytes(b"half")
    hours_ago = time.time() - 2 * 3600
    for p in [store.root / ".tmp" / "dead", *(store.root / ".tmp" / "dead").rglob("*")]:
        os.utime(p, (hours_ago, hours_ago))
    os.utime(store.root / ".tmp" / "live", (hours_ago, hours_ago))  # its file is fresh
    assert store.sweep() == 1
    assert [p.name for p in (store.root / ".tmp").iterdir()] == ["live"]
