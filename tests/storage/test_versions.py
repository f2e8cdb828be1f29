"""Model versions in the database: register (and activate in the same transaction), look up
within a project only, history newest first with the dataset hash, roll back to the base."""

from __future__ import annotations

import pytest

from storage import versions
from storage.datasets import snapshot
from storage.errors import NotFoundError
from storage.projects import create_project
from storage.utterances import add_utterance


def _new(project_id: int, dataset_id: int | None = None, **kw) -> versions.NewVersion:
    fields = {
        "project_id": project_id,
        "dataset_version_id": dataset_id,
        "method": "fast",
        "base_encoder": "minilm",
        "config": {"epochs": 1},
        "metrics": {"accuracy": 0.9},
        "artifact_path": "projects/1/models/a",
        "artifact_sha256": "0" * 64,
        "artifact_size": 10,
    }
    return versions.NewVersion(**{**fields, **kw})


def test_register_activate_and_roll_back(db):
    with db.session() as s:
        pid = create_project(s, "shop").id
        add_utterance(s, pid, "hi", ["greet"])
        dv = snapshot(s, pid)
        kept = versions.register_version(s, _new(pid, dv.id), activate=False)
        assert versions.active_version(s, pid) is None
        active = versions.register_version(s, _new(pid, dv.id, method="lora"), activate=True)
    with db.session() as s:
        mv = versions.active_version(s, pid)
        assert mv is not None and (mv.id, mv.method) == (active, "lora")
        rows = versions.history(s, pid)
        assert [v.id for v, _ in rows] == [active, kept]
        assert rows[0][1] == dv.content_hash
        versions.set_active(s, pid, None)
        assert versions.active_version(s, pid) is None
    assert mv.metrics == {"accuracy": 0.9}  # detached rows stay readable


def test_a_version_is_found_only_in_its_own_project(db):
    with db.session() as s:
        a = create_project(s, "a").id
        b = create_project(s, "b").id
        v = versions.register_version(s, _new(a))
        assert versions.get_version(s, a, v).id == v
        with pytest.raises(NotFoundError, match=f"No model version {v}"):
            versions.get_version(s, b, v)
        with pytest.raises(NotFoundError):
            versions.set_active(s, b, v)


def test_the_serving_stamp_moves_when_another_model_serves_or_the_retrain_goes_on(db):
    """What the Label tab polls (issue 65 item 8): equal while nothing changes; it moves when a
    version starts serving, moves to a better checkpoint, or its job counts a step."""
    from storage import jobs

    with db.session() as s:
        pid = create_project(s, "shop").id
        first = versions.serving_stamp(s, pid)
        assert versions.serving_stamp(s, pid) == first
        v = versions.register_version(s, _new(pid), activate=True)
    with db.session() as s:
        served = versions.serving_stamp(s, pid)
        assert served != first
        job, _ = jobs.create_job(s, pid, {})
    with db.session() as s:
        queued = versions.serving_stamp(s, pid)
        assert queued != served
        jobs.claim_job(s, job.id, pid=1)  # a job counts its steps once a worker runs it
        jobs.set_progress(s, job.id, step=3, total=10, loss=0.5, message="step 3 of 10")
    with db.session() as s:
        stepped = versions.serving_stamp(s, pid)
        assert stepped != queued and versions.serving_stamp(s, pid) == stepped
        versions.move_version(s, v, _new(pid, artifact_sha256="1" * 64), activate=True)
    with db.session() as s:
        assert versions.serving_stamp(s, pid)[1:3] == (v, "1" * 64)
        with pytest.raises(NotFoundError):
            versions.serving_stamp(s, pid + 100)


def test_a_persons_activation_is_recorded_and_a_version_with_no_files_is_never_made_active(db):
    """What the retention rule reads (issue 71 item 4): an activation by a person is recorded on
    the version (the rule keeps it), a pin is one flag, an export a time; a version marked as
    having no files is refused as the active one and as a pin, and the project is unchanged."""
    with db.session() as s:
        pid = create_project(s, "shop").id
        old = versions.register_version(s, _new(pid))
        new = versions.register_version(s, _new(pid), activate=True)
    with db.session() as s:
        assert versions.get_version(s, pid, new).activated_at is None  # a retrain promoted it
        versions.set_active(s, pid, old)
    with db.session() as s:
        assert versions.get_version(s, pid, old).activated_at is not None
        assert versions.set_pinned(s, pid, new, True) is True
        assert versions.set_pinned(s, pid, new, True) is False  # pinned already
        versions.mark_exported(s, pid, old)
        versions.mark_files_removed(s, pid, {new: "its files were removed by the rule"})
    with db.session() as s:
        assert versions.get_version(s, pid, old).exported_at is not None
        with pytest.raises(versions.FilesRemoved, match=f"v{new} cannot be activated: its files"):
            versions.set_active(s, pid, new)
    with db.session() as s:
        assert versions.active_version(s, pid).id == old
        assert versions.set_pinned(s, pid, new, False) is True  # unpinning one is allowed
        with pytest.raises(versions.FilesRemoved, match=f"v{new} cannot be pinned"):
            versions.set_pinned(s, pid, new, True)
        versions.record_int8_size(s, pid, {old: 1234})
    with db.session() as s:
        assert versions.get_version(s, pid, old).int8_size == 1234
