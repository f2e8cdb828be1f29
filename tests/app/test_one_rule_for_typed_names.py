"""Issue 65, item 1: one rule for an intent name a person typed, REST's (``Unknown intent …
Did you mean …``): every service a screen, REST or the CLI writes a label through refuses a name
the project does not have, naming the nearest, and changes nothing, unless creating it was asked
for explicitly. Before, only REST's ``/label`` refused; Evaluation's "Relabel as", the Data
tab's edit, add, bulk label and merge, a team's answers and the Map's lasso made the typo an
intent of one example."""

from __future__ import annotations

import pytest

from app.services.design import clusters
from app.services.labelling import bulk, team
from app.services.labelling import data as data_svc
from app.services.models import evaluation as eval_svc
from app.services.projects.io import destination, import_utterances
from app.services.projects.members import add_member
from app.services.queue import queue as queue_svc
from storage.errors import UnknownIntentError
from storage.utterances import NewUtterance
from tests.handles import live

TYPO = "track_ordr"
NEAREST = "Did you mean 'track_order'"


def _state(serving_state, p) -> tuple[list[str], dict[int, tuple[str, str]]]:
    rows = data_svc.table(serving_state.db, p)
    return data_svc.intent_names(serving_state.db, p), {
        r["id"]: (r["intents"], r["split"]) for r in rows
    }


def test_every_way_to_label_refuses_a_typo_naming_the_nearest_and_changes_nothing(
    serving_state, demo
):
    before = _state(serving_state, demo)
    rows = data_svc.table(serving_state.db, demo)
    train = next(r for r in rows if r["split"] == "train")
    test = next(r for r in rows if r["split"] == "test")
    unlabelled = [r["id"] for r in rows if r["split"] == "unlabelled"][:3]
    writes = {
        "relabel as": lambda: eval_svc.fix_test_row(
            serving_state.db, demo, test["id"], "relabel", TYPO, confirmed=True
        ),
        "edit": lambda: data_svc.label_utterance(serving_state.db, demo, train["id"], [TYPO]),
        "add": lambda: data_svc.add_utterance(serving_state.db, demo, "a new question", [TYPO]),
        "bulk preview": lambda: bulk.plan_label(serving_state.db, demo, unlabelled, [TYPO]),
        "bulk label": lambda: bulk.label_many(serving_state.db, demo, unlabelled, [TYPO]),
        "merge": lambda: data_svc.merge_intents(serving_state.db, demo, ["refund_status"], TYPO),
        "cluster": lambda: clusters.add_to_intent(serving_state.db, demo, unlabelled, TYPO),
        "label tab": lambda: queue_svc.typed_intent(serving_state.db, demo, "zz top"),
    }
    for where, write in writes.items():
        with pytest.raises(UnknownIntentError) as refused:
            write()
        said = str(refused.value)
        assert said.startswith("Unknown intent"), (where, said)
        assert NEAREST in said or "No intent's name is close to it." in said, (where, said)
        assert "Nothing was" in said, (where, said)
    assert _state(serving_state, demo) == before  # no intent, no label


def test_a_name_is_created_only_when_asked_and_written_another_way_it_is_the_intent(
    serving_state, demo
):
    unlabelled = [
        r["id"] for r in data_svc.table(serving_state.db, demo) if r["split"] == "unlabelled"
    ]
    data_svc.label_utterance(
        serving_state.db, demo, unlabelled[0], ["Track-Order"]
    )  # the intent itself
    assert "Track-Order" not in data_svc.intent_names(serving_state.db, demo)
    data_svc.label_utterance(
        serving_state.db, demo, unlabelled[1], ["out of scope"]
    )  # every project's
    done = bulk.label_many(serving_state.db, demo, unlabelled[2:4], ["gift_cards"], create=True)
    assert len(done.change) == 2 and "gift_cards" in data_svc.intent_names(serving_state.db, demo)
    data_svc.merge_intents(serving_state.db, demo, ["gift_cards"], "vouchers", create=True)
    assert "vouchers" in data_svc.intent_names(serving_state.db, demo)


def test_a_team_answer_names_intents_of_the_project(serving_state):
    """An answer was stored whatever it named, and became the label (a new intent) once the
    annotators agreed or a reviewer took it."""
    from app.access import auth

    rows = [NewUtterance("labelled track_order", ("track_order",))]
    rows += [NewUtterance(f"question number {i}", (), "unlabelled") for i in range(4)]
    import_utterances(serving_state.db, destination(serving_state.db, "t"), rows)
    ana = auth.add_user(serving_state.db, "ana", "designer", "ana-password")
    add_member(serving_state.db, live(serving_state, "t"), "ana")
    team.assign(serving_state.db, live(serving_state, "t"), ["ana"], overlap=0.0)
    uid = sorted(team.open_items(serving_state.db, live(serving_state, "t", ana)))[0]
    with pytest.raises(UnknownIntentError, match=NEAREST):
        team.submit(serving_state.db, live(serving_state, "t", ana), uid, "label", [TYPO])
    assert team.open_items(serving_state.db, live(serving_state, "t", ana))  # still hers to answer
    assert data_svc.intent_names(serving_state.db, live(serving_state, "t")) == ["track_order"]
    assert "track_order" in team.submit(
        serving_state.db, live(serving_state, "t", ana), uid, "label", ["track_order"]
    )
