"""Issue 63 item 2 in a real browser: labels typed in the Label tab, and nothing else, start a
retrain; the Label tab's line then says that a new version serves, with no click and no reload.
(The service tests, tests/app/test_auto_retrain.py, hold the rules: one retrain per project at a
time, labels during it start the next, the setting off starts none.)

A server of its own, with automatic retrains on (the suite's servers have them off), on a small
project (tests.samples.TINY) that retrains after 3 new labels. The imported labels are new labels
too (an import starts a retrain by itself on its own): the project is trained once before the
server starts, so that the only labels left to start one are those the test types."""

from __future__ import annotations

import csv
import json
import urllib.request

import pytest

from tests.e2e.annotator import Annotator
from tests.e2e.conftest import Server, cli, open_tab, shot
from tests.samples import TINY

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = "support"
AFTER = 3  # labels that start an automatic retrain
UNLABELLED = [
    "my card has gone",
    "tell me how much is in my account",
    "good evening",
    "I would like my money returned",
    "where did my card go",
    "what do I have left",
    "hey",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("auto")
    rows = root / "support.csv"
    with rows.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        for intent, texts in TINY.items():  # the fifth of each in the test split, as make_tiny
            w.writerows([t, intent, "train" if i < 4 else "test"] for i, t in enumerate(texts))
        w.writerows([t, "", "unlabelled"] for t in UNLABELLED)
    data = root / "data"
    cli(data, "import", str(rows), "--project", PROJECT)
    cli(data, "settings", "--project", PROJECT, "--set", f"auto_retrain_after={AFTER}")
    cli(data, "train", "--project", PROJECT, "--set", "epochs=1")  # v1 reads the imported labels
    srv = Server(data, "--no-demo", env={"INTENT_STUDIO_AUTO_RETRAIN": "on"})
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def _versions(server) -> list[dict]:
    url = f"{server.url}api/v1/projects/{PROJECT}/versions"
    with urllib.request.urlopen(url, timeout=60) as answer:
        return json.loads(answer.read())["versions"]


def test_labels_typed_in_the_label_tab_start_a_retrain_and_its_version_serves_without_a_click(
    server, page
):
    page.goto(server.url)
    open_tab(page, "Label")
    page.wait_for_function(
        "() => document.querySelector('#queue-card [data-item]')?.dataset.item"
        " && !(document.querySelector('#queue-card')?.innerText || '').includes('Loading')"
    )
    assert [(v["version"], v["trigger"]) for v in _versions(server)] == [(1, "manual")]
    bot = Annotator(page)
    card = bot.card()
    for _ in range(AFTER):
        page.keyboard.press("1")  # the first suggestion: a label, as a designer gives one
        card = bot.answered(card)
    # nothing is clicked from here: the watcher sees the labels and the quiet spell, the worker
    # retrains, the version serves, and the line says so
    line = page.wait_for_function(
        "() => { const t = document.querySelector('#queue-model')?.innerText || '';"
        " return t.includes('now serves') && t; }",
        timeout=300_000,
    ).json_value()
    assert "v2" in line and "accuracy" in line, line
    page.wait_for_function(  # and the project's line above the tabs follows
        "() => (document.querySelector('#project-summary')?.innerText || '').includes('model v2')"
    )
    shot(page, "63-2-labels-started-a-retrain")
    (made,) = [v for v in _versions(server) if v["version"] == 2]
    assert made["trigger"] == "auto" and made["active"], made
