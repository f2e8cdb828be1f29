"""Versions kept within bounds (issue 71 item 4, issue 73 item 5): the retention rule keeps the
files of the active, the newest N, the pinned, activated and exported versions and removes the
rest (after every job, and on demand); a version an automatic retrain kept back leaves nothing;
a version with no files is refused wherever it would serve; pin and unpin at every door; the
disk the versions use, and a budget that refuses a retrain."""

from __future__ import annotations

import html

import pytest
from sqlalchemy import func, select

from app import worker
from app.services.models import version_files
from app.services.models import versions as version_svc
from app.services.models.retention import BY_RULE, KEPT_BACK
from app.services.projects.settings import change as change_settings
from app.services.training import retrain_jobs
from app.ui.train import versions as panel
from storage.tables import ModelVersion, TrainingJob
from tests.app.versions_on_disk import add_version
from tests.handles import live
from tests.samples import QUICK, make_tiny

pytestmark = pytest.mark.slow


def _row(serving_state, version: int) -> ModelVersion:
    with serving_state.db.session() as s:
        mv = s.get(ModelVersion, version)
        assert mv is not None
        s.expunge(mv)
        return mv


def _has_files(serving_state, version: int) -> bool:
    return serving_state.artifacts.path(_row(serving_state, version).artifact_path).is_dir()


def test_the_rule_keeps_the_active_pinned_exported_activated_and_newest_and_removes_the_rest(
    serving_state, demo
):
    """Nine versions of one project, each with its files on disk (three with an int8 copy of
    their own). With keep_versions=2 the rule keeps v9 and v8 (the newest), the active one, the
    one pinned in the Versions panel, the one made active by hand, the one exported (recorded
    by the export's service); the three others lose their artifact and their int8 copy, their
    rows stay and say why, and exactly their bytes are freed."""
    pid = demo.id
    vs = [
        add_version(serving_state, pid, n, size=10_000 * n, int8=5_000 * (n in (2, 4, 9)))
        for n in range(1, 10)
    ]
    v1, v2, v3, v4, v5, v6, v7, v8, v9 = vs
    change_settings(serving_state.live, demo.handle(), {"keep_versions": "2"})
    version_svc.activate(serving_state.factories, demo, v3)  # by hand: kept for that
    version_svc.activate(serving_state.factories, demo, v6)  # the active one
    assert "pinned" in panel.pin(serving_state.factories, demo.handle(), f"v{v5}")
    version_files.exported(serving_state.db, demo.handle(), v1)
    going = {v2, v4, v7}
    int8 = 5_000 + 2  # its model and its model.json
    freed = sum(_row(serving_state, v).artifact_size or 0 for v in going) + 2 * int8
    # before the pass, the history says what it will do
    files = {r["version"]: r["files"] for r in version_svc.history(serving_state.db, demo)}
    assert files == {
        v9: "kept: newest 2",
        v8: "kept: newest 2",
        v7: "removed at the next pass",
        v6: "kept: active",
        v5: "kept: pinned",
        v4: "removed at the next pass",
        v3: "kept: activated by hand",
        v2: "removed at the next pass",
        v1: "kept: exported",
    }
    copies = {
        v: serving_state.artifacts.path(f"{_row(serving_state, v).artifact_path}-int8")
        for v in (v2, v4, v9)
    }
    assert all(f.is_dir() for f in copies.values())

    removed = version_files.prune(serving_state.db, serving_state.artifacts, demo.handle())

    assert set(removed.versions) == going and removed.freed == freed
    assert {v for v in vs if not _has_files(serving_state, v)} == going
    assert [v for v, f in copies.items() if f.exists()] == [v9]
    assert {v: _row(serving_state, v).files_removed for v in going} == dict.fromkeys(going, BY_RULE)
    rows = {r["version"]: r for r in version_svc.history(serving_state.db, demo)}
    assert len(rows) == 9 and rows[v2]["files"] == "removed by the rule"
    assert rows[v2]["disk_bytes"] == 0
    assert (
        rows[v9]["disk_bytes"] == (_row(serving_state, v9).artifact_size or 0) + int8
    )  # its copy too
    kept = sum(_row(serving_state, v).artifact_size or 0 for v in set(vs) - going) + int8
    after = version_files.disk_of(serving_state.db, demo.handle(), 1000)
    assert after.used == kept and after.with_files == 6
    # a second pass finds nothing more to remove
    assert "every version's files are kept" in panel.prune(serving_state.factories, demo.handle())


def test_activating_exporting_comparing_or_pinning_a_version_with_no_files_is_refused(
    serving_state, demo
):
    from app.services.projects.bundle_export import export_bundle

    pid = demo.id
    change_settings(serving_state.live, demo.handle(), {"keep_versions": "1"})
    old, kept = (
        add_version(serving_state, pid, 1),
        add_version(serving_state, pid, 2, activate=True),
    )
    version_files.prune(serving_state.db, serving_state.artifacts, demo.handle())
    assert not _has_files(serving_state, old) and _has_files(serving_state, kept)
    words = f"v{old} cannot be activated: {BY_RULE}."
    assert panel.make_active(serving_state.factories, demo.handle(), f"v{old}").endswith(
        f"{words}</span>"
    )
    with pytest.raises(ValueError, match=f"v{old} cannot be activated: its files were removed"):
        version_svc.activate(serving_state.factories, demo, old)
    assert demo.active_version_id == kept  # nothing changed
    with pytest.raises(ValueError, match=f"v{old} cannot be compared: its files were removed"):
        version_svc.compare(serving_state.db, demo, old, kept)
    with pytest.raises(ValueError, match=f"v{old} cannot be exported: its files were removed"):
        export_bundle(
            serving_state.live,
            demo.handle(),
            serving_state.settings.data_dir / "b.zip",
            version=old,
        )
    with pytest.raises(ValueError, match=f"v{old} cannot be pinned: its files were removed"):
        version_files.pin(serving_state.db, demo.handle(), old)
    # the active version's files are never removed by hand either, nor a pinned one's
    with pytest.raises(ValueError, match=f"v{kept} serves: make another version active first"):
        version_files.remove_files(serving_state.db, serving_state.artifacts, demo.handle(), kept)
    assert _has_files(serving_state, kept)


def test_a_version_an_automatic_retrain_kept_back_leaves_no_files_when_its_job_ends(serving_state):
    """An automatic retrain whose version the gate keeps back (it trains at a learning rate that
    wrecks the encoder, against the frozen MiniLM that serves): once its job ends, in the
    worker that ran it, the version's files are gone; its row stays, saying it was kept back,
    and nobody can make it active."""
    make_tiny(serving_state)
    wreck = {**QUICK, "lr": 1.0, "epochs": 3}
    auto, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, "tiny"), wreck, enqueue=False, trigger="auto"
    )
    worker.execute_job(serving_state, auto.id)
    done = retrain_jobs.job(serving_state.training, auto.id)
    assert done.status == "succeeded", done.log
    v = done.model_version_id
    assert v is not None and _row(serving_state, v).metrics["gate"]["passed"] is False, done.log
    assert live(serving_state, "tiny").active_version_id is None  # the frozen encoder serves on
    assert not _has_files(serving_state, v) and _row(serving_state, v).files_removed == KEPT_BACK
    row = version_svc.history(serving_state.db, live(serving_state, "tiny"))[0]
    assert row["files"] == "removed: kept back" and row["trigger"] == "auto"
    with pytest.raises(ValueError, match=f"v{v} cannot be activated: an automatic retrain kept"):
        version_svc.activate(serving_state.factories, live(serving_state, "tiny"), v)


def test_an_automatic_retrain_builds_no_int8_copy_for_a_version_it_keeps_back_and_says_so(tmp_path):
    """Its files go when the job ends, so an int8 copy of it is work for nothing (24 s of both
    cores in a BANKING77 walk, Xeon without AMX, where the copy was then removed): none is
    built, the version records why, and its words say what becomes of it, not that its copy
    serves or that it may be activated by hand."""
    import dataclasses

    from app.config import load_settings
    from app.services.training.retrain_int8 import KEPT_BACK as NOT_BUILT
    from app.services.training.serving_now import serving_now
    from app.serving.state import ServingState
    from app.ui.queue_model import model_html

    settings = dataclasses.replace(load_settings(tmp_path / "data"), int8=True)
    serving_state = ServingState.open(settings)
    try:
        make_tiny(serving_state)
        wreck = {**QUICK, "lr": 1.0, "epochs": 3}
        auto, _ = retrain_jobs.request_retrain(
            serving_state.training,
            live(serving_state, "tiny"),
            wreck,
            enqueue=False,
            trigger="auto",
        )
        worker.execute_job(serving_state, auto.id)
        done = retrain_jobs.job(serving_state.training, auto.id)
        assert done.status == "succeeded", done.log
        row = _row(serving_state, done.model_version_id)
        assert row.metrics["gate"]["passed"] is False, done.log
        assert "int8 copy" not in done.log.replace(NOT_BUILT, ""), done.log
        assert row.metrics["int8"]["reason"] == NOT_BUILT and not row.metrics["int8"]["passed"]
        assert "leaves nothing" in done.message and "by hand" not in done.message, done.message
        assert row.files_removed == KEPT_BACK
        # once it ended, the Train tab leads with what became of it, and the Label tab's line
        # says why the labels changed no model (it said only what serves)
        assert "kept back" in done.verdict and done.kept_back, done.verdict
        assert retrain_jobs.describe(done).startswith(f"{done.verdict}. v")
        now = serving_now(serving_state.training, live(serving_state, "tiny"))
        line = html.unescape(model_html(now))
        assert f"last retrain (automatic): {done.verdict}" in line, line
    finally:
        serving_state.close()


def _jobs(serving_state) -> int:
    with serving_state.db.session() as s:
        return s.scalar(select(func.count()).select_from(TrainingJob)) or 0


def test_a_retrain_of_a_project_whose_versions_use_its_disk_budget_is_refused_and_queues_nothing(
    tmp_path, monkeypatch, tiny_encoder
):
    """The deployment's budget (1 MB here) against the real bytes of the versions that have
    files: at 1.2 MB a retrain is refused with what to do, in the Train tab's words, and
    nothing is queued; removing a version's files brings the project under it again."""
    from app.config import load_settings
    from app.serving.state import ServingState
    from app.ui.train import retrain as retrain_panel

    monkeypatch.setenv("INTENT_STUDIO_VERSION_DISK_MB", "1")
    serving_state = ServingState.open(load_settings(tmp_path / "data"))
    try:
        make_tiny(serving_state, encoder=tiny_encoder)
        pid = live(serving_state, "tiny").id
        add_version(serving_state, pid, 1, size=700_000, activate=True)
        old = add_version(serving_state, pid, 2, size=500_000)
        version_svc.activate(
            serving_state.factories,
            live(serving_state, "tiny"),
            add_version(serving_state, pid, 3, size=100),
        )
        words = (
            "Project 'tiny''s versions use 1.2 MB of its 1 MB: unpin versions or remove their "
            "files (Train tab, Versions), or raise the budget (INTENT_STUDIO_VERSION_DISK_MB). "
            "Nothing was queued."
        )
        with pytest.raises(ValueError) as refused:
            retrain_jobs.request_retrain(
                serving_state.training, live(serving_state, "tiny"), QUICK, enqueue=False
            )
        assert str(refused.value) == words
        method = next(iter(retrain_jobs.METHOD_CHOICES))
        said, job_id, _ = retrain_panel.start(
            serving_state.training, live(serving_state, "tiny"), method, "", "local"
        )
        assert "1.2 MB of its 1 MB" in said and job_id is None
        assert _jobs(serving_state) == 0
        assert (
            "1.2 MB of this project's 1 MB"
            in version_files.disk_of(
                serving_state.db, live(serving_state, "tiny").handle(), 1
            ).words()
        )
        # a version's files removed by hand: the project is under its budget again
        version_files.remove_files(
            serving_state.db, serving_state.artifacts, live(serving_state, "tiny").handle(), old
        )
        _, created = retrain_jobs.request_retrain(
            serving_state.training, live(serving_state, "tiny"), QUICK, enqueue=False
        )
        assert created and _jobs(serving_state) == 1
    finally:
        serving_state.close()


def test_pin_and_unpin_from_the_versions_panel_and_the_command_line(serving_state, demo, capsys):
    """The panel's buttons and ``intent-studio versions`` pin and unpin (REST:
    tests/app/api/test_version_routes.py); a pinned version keeps its files past the rule, an
    unpinned one loses them at the next pass; the list says both and the disk."""
    from app.cli import main

    d = ["--data-dir", str(serving_state.settings.data_dir)]
    pid = demo.id
    change_settings(serving_state.live, demo.handle(), {"keep_versions": "1"})
    v1, v2 = add_version(serving_state, pid, 1), add_version(serving_state, pid, 2, activate=True)
    assert panel.pin(serving_state.factories, demo.handle(), f"v{v1}").startswith("✓")
    assert _row(serving_state, v1).pinned
    assert main([*d, "versions", "prune", "--project", str(demo)]) == 0
    assert "every version's files are kept" in capsys.readouterr().out
    assert _has_files(serving_state, v1)
    assert panel.unpin(serving_state.factories, demo.handle(), f"v{v1}").startswith("✓")
    assert not _row(serving_state, v1).pinned
    assert main([*d, "versions", "pin", f"v{v1}", "--project", str(demo)]) == 0
    assert f"v{v1} is pinned" in capsys.readouterr().out and _row(serving_state, v1).pinned
    assert main([*d, "versions", "list", "--project", str(demo)]) == 0
    listed = capsys.readouterr().out
    assert "kept: pinned" in listed and "of this project's 1 GB budget on disk" in listed
    assert main([*d, "versions", "unpin", str(v1), "--project", str(demo)]) == 0
    assert f"v{v1} is unpinned" in capsys.readouterr().out
    assert main([*d, "versions", "prune", "--project", str(demo)]) == 0
    assert f"Removed the files of v{v1}" in capsys.readouterr().out
    assert not _has_files(serving_state, v1) and _has_files(serving_state, v2)
    assert main([*d, "versions", "pin", "base", "--project", str(demo)]) == 2
    assert "frozen base encoder has no files" in capsys.readouterr().err


def test_in_a_bucket_the_rule_removes_a_versions_files_through_the_stores_own_remove(
    tmp_path, monkeypatch, s3
):
    """A team's model files live in a bucket (moto's S3 on loopback): the versions the rule does
    not keep are uncommitted and their objects deleted (their artifact and their int8 copy), as
    another machine sees it; the kept ones stay committed and intact."""
    from app.config import load_settings
    from app.services.projects.projects import ensure_demo_project
    from app.serving.state import ServingState
    from storage.remote_artifacts import open_artifacts

    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    bucket = s3.new_bucket()
    monkeypatch.setenv("INTENT_STUDIO_ARTIFACTS_URL", f"s3://{bucket}/studio")
    serving_state = ServingState.open(load_settings(tmp_path / "data"))
    try:
        demo = live(serving_state, ensure_demo_project(serving_state.db))
        change_settings(serving_state.live, demo.handle(), {"keep_versions": "1"})
        old = add_version(serving_state, demo.id, 1, int8=3_000)
        kept = add_version(serving_state, demo.id, 2, int8=3_000)
        rels = {v: _row(serving_state, v).artifact_path for v in (old, kept)}
        removed = version_files.prune(serving_state.db, serving_state.artifacts, demo.handle())
        assert set(removed.versions) == {old} and not removed.left
        elsewhere = open_artifacts(f"s3://{bucket}/studio", cache_dir=tmp_path / "other")
        keys = elsewhere.committed_keys()  # what a backup, or another machine, finds
        assert not [
            k for k in keys if k.startswith(f"{rels[old]}/") or k.startswith(f"{rels[old]}-int8/")
        ]
        assert [k for k in keys if k.startswith(f"{rels[kept]}-int8/")]
        assert not elsewhere.verify(rels[old], _row(serving_state, old).artifact_sha256 or "")
        assert elsewhere.verify(rels[kept], _row(serving_state, kept).artifact_sha256 or "")
        assert _row(serving_state, kept).int8_size == 3_000 + 2  # measured from this machine's copy
    finally:
        serving_state.close()


def test_a_report_whose_exported_mark_meets_a_busy_database_is_still_made_and_says_so_in_the_log(
    serving_state, demo, caplog
):
    """The report is a reader's: its version's 'exported' mark (which the retention rule reads)
    is bookkeeping after the report is made. In the suite the shared BANKING77 server once
    answered a report with 'The database is busy …' because that mark waited past SQLite's lock
    timeout; now the mark is logged as not written and the report stands, and with the lock free
    it is written."""
    import sqlite3

    from app.services.projects.reports import mark_reported
    from storage.db import Database

    v1 = add_version(serving_state, demo.id, 1, activate=True)
    url = serving_state.settings.database_url
    assert url.startswith("sqlite:///")
    impatient = Database(url, busy_timeout=0.2, apply_migrations=False)
    holder = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds SQLite's one write lock
        with caplog.at_level("WARNING", logger="app.services.projects.reports"):
            mark_reported(impatient, demo.handle(), v1)  # no exception: the report stands
        assert "could not be marked exported (the database was busy)" in caplog.text
        assert _row(serving_state, v1).exported_at is None
        holder.execute("ROLLBACK")
        mark_reported(impatient, demo.handle(), v1)
        assert _row(serving_state, v1).exported_at is not None
    finally:
        holder.close()
        impatient.dispose()
