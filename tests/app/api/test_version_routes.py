"""A project's versions over REST (issue 71 item 4, issue 73 item 5): the disk their files use,
pin and unpin, a version's files removed, the retention rule applied; a designer may, as she
may make a version active, a viewer may read only."""

from __future__ import annotations

import pytest

from storage.tables import ModelVersion
from tests.app.api.conftest import bearer
from tests.app.versions_on_disk import add_version

pytestmark = pytest.mark.slow


def _row(serving_state, version: int) -> ModelVersion:
    with serving_state.db.session() as s:
        mv = s.get(ModelVersion, version)
        assert mv is not None
        s.expunge(mv)
        return mv


def test_pin_unpin_remove_and_prune_over_rest_a_designer_may_a_viewer_may_not(
    serving_state, demo, team
):
    client, tokens = team
    dana, vic = bearer(tokens["dana"]), bearer(tokens["vic"])
    base = f"/api/v1/projects/{demo}/versions"
    old, newer = (
        add_version(serving_state, demo.id, 1, size=2_000),
        add_version(serving_state, demo.id, 2),
    )
    active = add_version(serving_state, demo.id, 3, size=3_000, activate=True)

    listed = client.get(base, headers=vic)  # a viewer reads the versions and their disk
    assert listed.status_code == 200
    body = listed.json()
    assert [v["files"] for v in body["versions"]] == [
        "kept: active",
        *["kept: newest 3"] * 2,
    ]
    assert body["versions"][0]["disk_bytes"] == _row(serving_state, active).artifact_size
    assert body["disk"]["bytes"] == sum(
        _row(serving_state, v).artifact_size or 0 for v in (old, newer, active)
    )
    assert (
        body["disk"]["budget_bytes"] == 1_000_000_000 and "budget on disk" in body["disk"]["words"]
    )

    refused = client.put(f"{base}/{old}/pin", headers=vic)
    assert refused.status_code == 403 and "needs the designer role" in refused.json()["error"]
    assert not _row(serving_state, old).pinned
    pinned = client.put(f"{base}/v{old}/pin", headers=dana)
    assert (
        pinned.status_code == 200
        and pinned.json()["message"] == f"v{old} is pinned: it keeps its files."
    )
    assert _row(serving_state, old).pinned
    assert client.delete(f"{base}/{old}/pin", headers=vic).status_code == 403
    assert _row(serving_state, old).pinned
    unpinned = client.delete(f"{base}/{old}/pin", headers=dana)
    assert unpinned.status_code == 200 and f"v{old} is unpinned" in unpinned.json()["message"]
    assert not _row(serving_state, old).pinned

    assert client.delete(f"{base}/{newer}/files", headers=vic).status_code == 403
    assert _row(serving_state, newer).files_removed is None
    serving = client.delete(f"{base}/{active}/files", headers=dana)
    assert (
        serving.status_code == 409
        and "serves: make another version active" in serving.json()["error"]
    )
    gone = client.delete(f"{base}/{newer}/files", headers=dana)
    assert gone.status_code == 200 and f"Removed the files of v{newer}" in gone.json()["message"]
    assert _row(serving_state, newer).files_removed == "its files were removed by dana"

    assert client.post(f"{base}/prune", headers=vic).status_code == 403
    pruned = client.post(f"{base}/prune", headers=dana)
    assert pruned.status_code == 200 and pruned.json()["removed"] == []  # newest 3 kept
    activated = client.post(f"{base}/{newer}/activate", headers=dana)
    assert activated.status_code == 409
    assert (
        f"v{newer} cannot be activated: its files were removed by dana" in activated.json()["error"]
    )
