"""Issue 63 item 2 in a real browser: labels typed in the Label tab, and nothing else, start a
retrain; the Label tab's line then says that a new version serves, with no click and no reload.
(The service tests, tests/app/test_auto_retrain.py, hold the rules: one retrain per project at a
time, labels during it start the next, the setting off starts none.)

A server of its own, with automatic retrains on (the suite's servers have them off), on a small
project that retrains after 3 new labels."""

from __future__ import annotations

import csv
import json
import urllib.request

import pytest

from tests.e2e.annotator import Annotator
from tests.e2e.conftest import Server, cli, open_tab, shot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = "support"
AFTER = 3  # labels that start an automatic retrain
# Five intents, four training examples and one test question each, and unlabelled questions.
ROWS = {
    "card_lost": [
        "I lost my card",
        "my card is missing",
        "card was stolen",
        "someone took my card",
    ],
    "balance": ["what is my balance", "how much money do I have", "show my balance", "balance"],
    "greeting": ["hello there", "hi", "good morning", "hey, how are you"],
    "refund": ["I want my money back", "refund my order", "how do I get a refund", "refund me"],
    "transfer": ["send money to Ann", "transfer 20 to my son", "wire money abroad", "pay my rent"],
}
TESTS = {
    "card_lost": "cannot find my bank card",
    "balance": "balance please",
    "greeting": "hello!",
    "refund": "please give me a refund",
    "transfer": "move money to savings",
}
UNLABELLED = [
    "my card has gone",
    "tell me how much is in my account",
    "good evening",
    "I would like my money returned",
    "send 50 euros to my friend",
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
        for intent, texts in ROWS.items():
            w.writerows([t, intent, "train"] for t in texts)
            w.writerow([TESTS[intent], intent, "test"])
        w.writerows([t, "", "unlabelled"] for t in UNLABELLED)
    data = root / "data"
    cli(data, "import", str(rows), "--project", PROJECT)
    cli(data, "settings", "--project", PROJECT, "--set", f"auto_retrain_after={AFTER}")
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
    assert _versions(server) == []  # never retrained: the base encoder serves
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
    assert "v1" in line and "accuracy" in line, line
    page.wait_for_function(  # and the project's line above the tabs follows
        "() => (document.querySelector('#project-summary')?.innerText || '').includes('model v1')"
    )
    shot(page, "63-2-labels-started-a-retrain")
    (made,) = [v for v in _versions(server) if v["version"] == 1]
    assert made["trigger"] == "auto" and made["active"], made
