"""How far the background encoding of a project's rows is, in REST and the CLI (issue 72
item 2): the project's ``encoding`` field, and a line under its headline in
``intent-studio projects``."""

from __future__ import annotations

from app.services.projects.io import import_utterances
from app.services.queue import queue as q
from app.serving.row_encoding import spaces_of
from storage.utterances import NewUtterance


def test_rest_and_the_cli_say_how_far_the_encoding_is(
    serving_state, demo, client, capsys, monkeypatch
):
    from app.cli import main
    from app.services.queue import queue_order

    monkeypatch.setattr(queue_order, "FIRST_BATCH", 20)
    rows = [
        NewUtterance(f"is order AC-{7000 + i} on its way to me", (), "unlabelled")
        for i in range(150)
    ]
    import_utterances(serving_state.db, demo, rows)
    assert (
        q.next_item(serving_state.live, demo, [], "useful")[0] is not None
    )  # a first batch, the rest not
    found = client.get("/api/v1/projects").json()["projects"][0]["encoding"]
    assert found["space"] == "the base encoder" and not found["done"]
    assert found["encoded"] < found["rows"] == 217 + 150
    spaces = spaces_of(serving_state.live)
    spaces.encode_all(demo.id)
    found = client.get("/api/v1/projects").json()["projects"][0]["encoding"]
    assert found["done"] and found["encoded"] == found["rows"]
    assert (
        main(["--data-dir", str(serving_state.settings.data_dir), "projects"]) == 0
    )  # what the server wrote
    assert "every row encoded (367, in the base encoder's space)" in capsys.readouterr().out
