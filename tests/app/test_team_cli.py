"""``intent-studio team``: assign a project's unlabelled utterances to annotators with an overlap,
print the agreement on it (kappa per pair as scikit-learn computes it, alpha, the intents agreed
on least with their disputed counts), export every answer as JSONL; bad input exits 2 with a
message."""

from __future__ import annotations

import json

import pytest
from sklearn.metrics import cohen_kappa_score

from app.access import auth
from app.cli import main
from app.config import load_settings
from app.services.labelling import team
from app.serving.state import ServingState
from tests.handles import live
from tests.samples import write_csv

UNLABELLED = [f"a question about my order, number {i}" for i in range(20)]


@pytest.fixture
def shop(tmp_path, capsys):
    """A project 'shop' (4 labelled, 20 unlabelled utterances) in a data directory, with ana and
    ben (designers) and vic (a viewer); yields (data-dir arguments, context, users by name)."""
    labelled = [
        ["where is my parcel", "track_order", "train"],
        ["track my order", "track_order", "train"],
        ["cancel my order", "cancel_order", "train"],
        ["stop the order please", "cancel_order", "train"],
    ]
    src = write_csv(
        tmp_path / "shop.csv", [*labelled, *([t, "", "unlabelled"] for t in UNLABELLED)]
    )
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(src), "--project", "shop"]) == 0
    serving_state = ServingState.open(load_settings(tmp_path / "data"))
    users = {
        name: auth.add_user(serving_state.db, name, role, f"{name}-password")
        for name, role in [("ana", "designer"), ("ben", "designer"), ("vic", "viewer")]
    }
    for name in users:  # each with their own role in the project
        assert main([*d, "members", "add", name, "--project", "shop"]) == 0
    capsys.readouterr()
    yield d, serving_state, users
    serving_state.close()


@pytest.mark.parametrize("sub", ["assign", "agreement", "export"])
def test_every_team_subcommand_has_help(sub, capsys):
    with pytest.raises(SystemExit) as info:
        main(["team", sub, "--help"])
    assert info.value.code == 0 and "usage: intent-studio team" in capsys.readouterr().out


def test_assign_splits_the_unlabelled_utterances_with_the_overlap_once(shop, capsys):
    d, serving_state, _ = shop
    assert main([*d, "team", "assign", "shop", "--annotators", "ana,ben", "--overlap", "0.2"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == "Assigned in 'shop': ana 12, ben 12; 4 to two annotators (the overlap)."
    assert team.progress(serving_state.db, live(serving_state, "shop")) == {
        "ana": (12, 0),
        "ben": (12, 0),
    }
    assert main([*d, "team", "assign", "shop", "--annotators", "ana,ben"]) == 0
    assert "Nothing assigned" in capsys.readouterr().out  # nobody gets an item twice


def test_assign_with_search_and_limit_takes_only_those(shop, capsys):
    d, serving_state, users = shop
    argv = [*d, "team", "assign", "shop", "--annotators", "ana", "--overlap", "0"]
    assert main([*argv, "--search", "NUMBER 1", "--limit", "3"]) == 0
    mine = team.items(
        serving_state.db,
        live(serving_state, "shop"),
        team.open_items(serving_state.db, live(serving_state, "shop", users["ana"])),
    )
    assert [r["text"] for r in mine] == [UNLABELLED[1], UNLABELLED[10], UNLABELLED[11]]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["assign", "shop", "--annotators", "vic", "--overlap", "0"], "designer role"),
        (["assign", "shop", "--annotators", "ana"], "two annotators"),
        (["assign", "shop", "--annotators", "ana,ben", "--overlap", "2"], "between 0 and 1"),
        (["assign", "shop", "--annotators", "ana,ben", "--limit", "0"], "a whole number from 1"),
        (["assign", "nope", "--annotators", "ana,ben"], "nope"),
        (["agreement", "nope"], "nope"),
    ],
)
def test_bad_input_exits_2_with_the_message_and_assigns_nothing(shop, capsys, argv, message):
    d, serving_state, _ = shop
    try:
        code = main([*d, "team", *argv])
    except SystemExit as usage:  # a number the option does not take: argparse's usage error
        code = usage.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert team.progress(serving_state.db, live(serving_state, "shop")) == {}


def test_agreement_prints_kappa_alpha_and_the_intents_agreed_on_least(shop, capsys):
    d, serving_state, users = shop
    assert main([*d, "team", "agreement", "shop"]) == 0
    assert "No agreement yet in 'shop'" in capsys.readouterr().out

    main([*d, "team", "assign", "shop", "--annotators", "ana,ben", "--overlap", "0.2"])
    ana, ben = users["ana"], users["ben"]
    both = sorted(
        set(team.open_items(serving_state.db, live(serving_state, "shop", ana)))
        & set(team.open_items(serving_state.db, live(serving_state, "shop", ben)))
    )
    said_ana = ["track_order", "track_order", "cancel_order", "cancel_order"]
    said_ben = ["track_order", "cancel_order", "cancel_order", "cancel_order"]
    for uid, a, b in zip(both, said_ana, said_ben, strict=True):
        team.submit(serving_state.db, live(serving_state, "shop", ana), uid, "label", [a])
        team.submit(serving_state.db, live(serving_state, "shop", ben), uid, "label", [b])
    capsys.readouterr()

    assert main([*d, "team", "agreement", "shop"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("4 overlap item(s) answered twice or more, 1 disputed;")
    kappa = cohen_kappa_score(said_ana, said_ben)
    pair = next(line for line in out.splitlines() if line.startswith("ana / ben"))
    assert pair.split() == ["ana", "/", "ben", "4", "3", f"{kappa:.3f}"]
    rows = {line.split()[0]: line.split() for line in out.splitlines()[-2:]}
    assert rows["track_order"][-1] == "1" and rows["cancel_order"][-1] == "1"  # disputed
    assert rows["track_order"][2] == "kappa"


def test_export_writes_every_answer_as_one_json_line(shop, capsys, tmp_path):
    d, serving_state, users = shop
    main([*d, "team", "assign", "shop", "--annotators", "ana,ben", "--overlap", "0.2"])
    ana, ben = users["ana"], users["ben"]
    uid = sorted(
        set(team.open_items(serving_state.db, live(serving_state, "shop", ana)))
        & set(team.open_items(serving_state.db, live(serving_state, "shop", ben)))
    )[0]
    team.submit(serving_state.db, live(serving_state, "shop", ana), uid, "label", ["track_order"])
    team.submit(serving_state.db, live(serving_state, "shop", ben), uid, "oos")
    capsys.readouterr()

    out = tmp_path / "answers.jsonl"
    assert main([*d, "team", "export", "shop", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"Wrote 2 answer(s) to {out}."
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["id"], r["annotator"], r["answer"], r["intents"]) for r in records] == [
        (uid, "ana", "label", ["track_order"]),
        (uid, "ben", "oos", ["out_of_scope"]),
    ]
    assert records[0]["text"] in UNLABELLED and records[0]["accepted"] is None
