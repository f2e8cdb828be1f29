"""Issue 64, item 3: an undo never takes a project past a capacity limit. With the row cap at 12:
fill to 12, delete one, add one, undo the delete: before, 13 rows (REST and CLI alike). Now the
undo is refused with the limit named and nothing changed, at every door (REST, the CLI, the
Activity tab: all go through :func:`storage.audit.undo_batch`); once there is room again the
same undo goes through. The intent cap holds the same way."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.cli import main
from app.config import load_settings
from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.projects.io import destination, import_file
from app.serving.state import ServingState
from app.ui.activity_tab import undo_selected
from tests.handles import live

pytestmark = pytest.mark.fast

CAP = 12
PROJECT = "capped"


@pytest.fixture
def full(tmp_path, monkeypatch):
    """A project at its row cap (12 utterances), its data directory and its serving state."""
    monkeypatch.setenv("INTENT_STUDIO_MAX_ROWS", str(CAP))
    monkeypatch.setenv("INTENT_STUDIO_MAX_INTENTS", "3")
    data = tmp_path / "data"
    serving_state = ServingState.open(load_settings(data))
    rows = ["text,label"] + [f"utterance number {i},intent_{i % 3}" for i in range(CAP)]
    (tmp_path / "rows.csv").write_text("\n".join(rows) + "\n")
    import_file(serving_state.db, destination(serving_state.db, PROJECT), tmp_path / "rows.csv")
    yield serving_state, data
    serving_state.close()


def _count(serving_state: ServingState) -> int:
    return len(data_svc.table(serving_state.db, live(serving_state, PROJECT), limit=1000))


def _delete_then_fill(serving_state: ServingState, door: str, data) -> str:
    """Delete one row through ``door``, add another in its place: the project is full again.
    Returns the delete's batch."""
    p = live(serving_state, PROJECT)
    uid = data_svc.utterance_id(serving_state.db, p, "utterance number 4")
    if door == "cli":
        assert main(["--data-dir", str(data), "delete", str(uid), "--project", PROJECT]) == 0
        (batch,) = [
            r["batch"] for r in history.activity(serving_state.db, p) if r["action"] == "delete"
        ]
    else:
        batch = data_svc.delete_utterance(serving_state.db, p, uid).batch
    data_svc.add_utterance(serving_state.db, p, "a new utterance in its place", ["intent_1"])
    assert _count(serving_state) == CAP
    return batch


def _undo(serving_state: ServingState, door: str, data, batch: str, capsys) -> str:
    """Undo ``batch`` through ``door``: what it says (a refusal, or what was undone)."""
    if door == "rest":
        from app.api import create_api

        with TestClient(create_api(serving_state)) as client:
            answer = client.post(f"/api/v1/projects/{PROJECT}/undo", json={"batch": batch})
        said = answer.json().get("error") or answer.json().get("message")
        assert answer.status_code == (400 if "at most" in said else 200), answer.text
        return str(said)
    if door == "cli":
        capsys.readouterr()
        code = main(["--data-dir", str(data), "undo", "--project", PROJECT, "--batch", batch])
        out, err = capsys.readouterr()
        assert code == (2 if "at most" in err else 0) and "Traceback" not in err
        return err or out
    return undo_selected(serving_state.db, live(serving_state, PROJECT).handle(), batch)


@pytest.mark.parametrize("door", ["rest", "cli", "activity_tab"])
def test_an_undo_that_would_pass_the_row_cap_is_refused_with_the_limit_named(full, door, capsys):
    serving_state, data = full
    batch = _delete_then_fill(serving_state, door, data)
    said = _undo(serving_state, door, data, batch, capsys)
    assert re.search(r"at most 12 utterances; undoing this change would make 13", said), said
    assert "Nothing was changed" in said
    assert _count(serving_state) == CAP  # nothing changed: the deleted row is still gone
    p = live(serving_state, PROJECT)
    assert "utterance number 4" not in {
        r["text"] for r in data_svc.table(serving_state.db, p, limit=99)
    }
    (row,) = [r for r in history.activity(serving_state.db, p) if r["batch"] == batch]
    assert row["undoable"]  # and it can still be undone, once there is room
    data_svc.delete_utterance(
        serving_state.db, p, data_svc.utterance_id(serving_state.db, p, "utterance number 7")
    )
    said = _undo(serving_state, door, data, batch, capsys)
    assert "Undid" in said and _count(serving_state) == CAP


def test_an_undo_that_would_make_intents_again_past_the_intent_cap_is_refused(full):
    """Deleting an intent, then creating another in its place: undoing the delete would make it
    again, a fourth intent where the cap is 3."""
    serving_state, _ = full
    p = live(serving_state, PROJECT)
    data_svc.delete_intent(serving_state.db, p, "intent_2")
    data_svc.create_intent(serving_state.db, p, "intent_new")
    (batch,) = [
        r["batch"] for r in history.activity(serving_state.db, p) if r["action"] == "delete_intent"
    ]
    with pytest.raises(ValueError, match=r"at most 3 intents; undoing this change would make 4"):
        history.undo_batch(serving_state.db, p, batch)
    assert "intent_2" not in data_svc.intent_names(serving_state.db, p)
