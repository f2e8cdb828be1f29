"""``intent-studio clusters``: the Design tab's candidate intents from the command line, as a
table or JSON; too few unlabelled utterances is a clear message and exit status 2."""

from __future__ import annotations

import json

from app.cli import main
from tests.samples import GIFT, HOURS, KLARNA, write_csv


def _project(tmp_path, unlabelled: list[str]) -> list[str]:
    labelled = [
        ["where is my parcel", "track_order", "train"],
        ["track my order", "track_order", "train"],
        ["my card payment failed", "payment_failed", "train"],
        ["the payment did not go through", "payment_failed", "train"],
    ]
    src = write_csv(
        tmp_path / "logs.csv", [*labelled, *([t, "", "unlabelled"] for t in unlabelled)]
    )
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(src), "--project", "shop"]) == 0
    return d


def test_clusters_prints_the_groups_with_words_nearest_intent_and_examples(tmp_path, capsys):
    d = _project(tmp_path, GIFT + HOURS + KLARNA)
    capsys.readouterr()
    assert main([*d, "clusters", "shop"]) == 0
    out = capsys.readouterr().out
    assert "candidate intent(s) in 'shop'" in out and "central examples" in out
    klarna = next(line for line in out.splitlines() if "klarna ·" in line)
    assert "payment_failed (" in klarna  # the nearest existing intent, with its similarity

    assert main([*d, "clusters", "--project", "shop", "--json", "--examples", "2"]) == 0
    found = json.loads(capsys.readouterr().out)
    for group in (False, True):  # the new ones first, then those that resemble an intent
        coherence = [c["cohesion"] for c in found if bool(c["resembles"]) is group]
        assert coherence == sorted(coherence, reverse=True)  # each most coherent first
    like = [bool(c["resembles"]) for c in found]
    assert like == sorted(like) and len(found) >= 3
    gift = next(c for c in found if "gift" in c["keywords"][:2])
    assert len(gift["examples"]) == 2 and all(t in GIFT for t in gift["examples"])
    assert len(gift["ids"]) == gift["size"]


def test_too_few_unlabelled_utterances_exit_2_with_a_clear_message(tmp_path, capsys):
    d = _project(tmp_path, GIFT[:5])
    capsys.readouterr()
    assert main([*d, "clusters", "shop"]) == 2
    err = capsys.readouterr().err
    assert "has 5 unlabelled utterances; candidate intents need at least 20" in err
    assert "Traceback" not in err
    assert main([*d, "clusters"]) == 2
    assert "Give the project" in capsys.readouterr().err
    assert main([*d, "clusters", "nope"]) == 2
    assert "Traceback" not in capsys.readouterr().err
