"""Backup and restore through the CLI: a restored instance predicts identically; a damaged or
hostile archive restores nothing; a non-empty data directory is refused."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time

import pytest

from app import worker
from app.cli import main
from app.config import load_settings
from app.services.models import predict as predict_svc
from app.services.models.versions import history
from app.services.projects import backup as backup_svc
from app.services.training import retrain_jobs
from app.serving.state import ServingState
from storage.errors import StorageError
from tests.handles import live
from tests.samples import QUICK, make_tiny

pytestmark = pytest.mark.slow

QUERIES = ["I can't find my card anywhere", "how much cash is in my account", "hey there"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A data directory with a trained, active version (made once for the module)."""
    serving_state = ServingState.open(load_settings(tmp_path_factory.mktemp("source") / "data"))
    make_tiny(serving_state)
    # A LoRA version: the artifact is small, so rewriting the archive below stays quick.
    job, _ = retrain_jobs.request_retrain(
        serving_state.training,
        live(serving_state, "tiny"),
        {**QUICK, "method": "lora"},
        enqueue=False,
    )
    worker.execute_job(serving_state, job.id)
    from app.services.models.versions import activate

    activate(
        serving_state.factories,
        live(serving_state, "tiny"),
        retrain_jobs.job(serving_state.training, job.id).model_version_id,
    )
    yield serving_state
    serving_state.close()


@pytest.fixture(scope="module")
def backed_up(source, tmp_path_factory):
    """The source backed up while its context is open (the online backup API)."""
    archive = tmp_path_factory.mktemp("backup") / "backup.tar.gz"
    assert main(["--data-dir", str(source.settings.data_dir), "backup", "-o", str(archive)]) == 0
    return archive


def test_a_restored_instance_predicts_identically(source, backed_up, tmp_path, capsys):
    serving_state = source
    target = tmp_path / "restored"
    assert main(["--data-dir", str(target), "restore", str(backed_up)]) == 0
    restored = ServingState.open(load_settings(target))
    try:
        assert history(restored.db, live(restored, "tiny")) == history(
            serving_state.db, live(serving_state, "tiny")
        )
        before = predict_svc.predict(serving_state.live, live(serving_state, "tiny"), QUERIES)
        after = predict_svc.predict(restored.live, live(restored, "tiny"), QUERIES)
        for a, b in zip(before, after, strict=True):
            assert a["top"] == b["top"]
            assert a["score"] == pytest.approx(b["score"], abs=1e-5)
    finally:
        restored.close()
    # and never over an existing data directory
    assert main(["--data-dir", str(target), "restore", str(backed_up)]) == 2
    assert "not empty" in capsys.readouterr().err


def _rewrite(src, dst, change) -> None:
    with tarfile.open(src, "r:gz") as tin, tarfile.open(dst, "w:gz") as tout:
        for m in tin.getmembers():
            data = tin.extractfile(m).read()
            m, data = change(m, data)
            if m is not None:
                m.size = len(data)
                tout.addfile(m, io.BytesIO(data))


def _flip_artifact(m, data):
    return m, (data[:-1] + bytes([data[-1] ^ 1])) if m.name.startswith("artifacts/") else data


def _evil_path(m, data):
    if m.name == "studio.db":
        m.name = "../escaped.db"
    return m, data


def _drop_db(m, data):
    return (None, data) if m.name == "studio.db" else (m, data)


def _bad_format(m, data):
    if m.name == "backup.json":
        doc = json.loads(data)
        doc["format"] = 99
        data = json.dumps(doc).encode()
    return m, data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_flip_artifact, "damaged"),
        (_evil_path, "unsafe path"),
        (_drop_db, "does not match"),
        (_bad_format, "Unknown backup format"),
    ],
    ids=["tampered", "path-traversal", "missing-db", "format"],
)
def test_a_bad_archive_restores_nothing(backed_up, tmp_path, capsys, change, message):
    bad = tmp_path / "bad.tar.gz"
    _rewrite(backed_up, bad, change)
    target = tmp_path / "restored"
    assert main(["--data-dir", str(target), "restore", str(bad)]) == 2
    assert message in capsys.readouterr().err
    assert not target.exists() or not any(target.iterdir())
    assert not (tmp_path / "escaped.db").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".restore-")]


# ---- the archive rules, on a hand-made data directory (no model needed)


@pytest.fixture
def small_backup(tmp_path):
    import sqlite3

    db = tmp_path / "src" / "studio.db"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    (tmp_path / "src" / "artifacts" / "v1").mkdir(parents=True)
    (tmp_path / "src" / "artifacts" / "v1" / "w.safetensors").write_bytes(b"weights")
    archive = tmp_path / "small.tar.gz"
    manifest = backup_svc.backup(db, tmp_path / "src" / "artifacts", archive)
    assert sorted(manifest["files"]) == ["artifacts/v1/w.safetensors", "studio.db"]
    return archive


def _symlink(m, data):
    if m.name.startswith("artifacts/"):
        m.type, m.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return m, data


def _unexpected(m, data):
    if m.name.startswith("artifacts/"):
        m.name = "notes.txt"
    return m, data


def _not_a_database(m, data):
    if m.name == "backup.json":
        doc = json.loads(data)
        doc["files"]["studio.db"] = hashlib.sha256(b"junk" * 100).hexdigest()
        doc["sizes"]["studio.db"] = 400
        data = json.dumps(doc).encode()
    return m, (b"junk" * 100 if m.name == "studio.db" else data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_symlink, "not a plain file"),
        (_unexpected, "unexpected file 'notes.txt'"),
        (_not_a_database, "fails its integrity check"),
        (_evil_path, "unsafe path"),
    ],
    ids=["symlink", "unexpected", "not-a-database", "path-traversal"],
)
def test_a_hostile_small_archive_restores_nothing(small_backup, tmp_path, change, message):
    bad = tmp_path / "bad.tar.gz"
    _rewrite(small_backup, bad, change)
    target = tmp_path / "restored"
    with pytest.raises(StorageError, match=message):
        backup_svc.restore(bad, target)
    assert not target.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".restore-")]


def test_a_small_backup_restores(small_backup, tmp_path):
    manifest = backup_svc.restore(small_backup, tmp_path / "restored")
    assert (tmp_path / "restored" / "artifacts/v1/w.safetensors").read_bytes() == b"weights"
    assert not (tmp_path / "restored" / "backup.json").exists()
    assert manifest["format"] == 1


def test_a_file_that_is_no_tar_is_refused(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"junk")
    with pytest.raises(StorageError, match="not a readable tar archive"):
        backup_svc.restore(junk, tmp_path / "restored")


def test_a_gzip_bomb_backup_is_refused_quickly_and_leaves_nothing(small_backup, tmp_path):
    """A backup whose database became 256 MiB of zeros (about 1 MB of gzip) is refused from the
    member's header: the manifest says another size. Before, 2 MB wrote 2 GiB to staging."""
    from tests.core.test_safe_tar import _Zeros

    bomb = tmp_path / "bomb.tar.gz"
    with (
        tarfile.open(small_backup, "r:gz") as tin,
        tarfile.open(bomb, "w:gz", compresslevel=1) as tout,
    ):
        for m in tin.getmembers():
            if m.name == "studio.db":
                m.size = 256 * 1024**2
                tout.addfile(m, io.BufferedReader(_Zeros(m.size)))
            else:
                tout.addfile(m, tin.extractfile(m))
    assert bomb.stat().st_size < 3 * 1024**2
    target = tmp_path / "restored"
    start = time.perf_counter()
    assert main(["--data-dir", str(target), "restore", str(bomb)]) == 2
    assert time.perf_counter() - start < 10  # bounded: the bomb is refused, not expanded
    assert not target.exists() or not any(target.iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".restore-")]


def test_a_restore_over_the_size_cap_is_refused(small_backup, tmp_path):
    with pytest.raises(StorageError, match=r"exceeds the limit of 100 bytes.*Nothing was restored"):
        backup_svc.restore(small_backup, tmp_path / "restored", max_bytes=100)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".restore-")]


def test_an_unreadable_manifest_is_a_clear_refusal(small_backup, tmp_path):
    bad = tmp_path / "bad.tar.gz"
    _rewrite(small_backup, bad, lambda m, d: (m, b"[" * 100_000 if m.name == "backup.json" else d))
    with pytest.raises(StorageError, match=r"backup\.json is unreadable"):
        backup_svc.restore(bad, tmp_path / "restored")
