"""The Design tab's callbacks as the browser calls them: find clusters, pick one, keep some
examples, create an intent (its message says how to undo); merge / split what-ifs answer with
their estimate or a message, never a traceback; the out-of-scope trade-off is set, turned off
and back on, and what the section shows follows the project's setting."""

from __future__ import annotations

import html

from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.projects import projects as project_svc
from app.ui.common import unbroken
from app.ui.design import clusters as ui
from app.ui.design import intent_choices, scope
from app.ui.design import whatif as whatif_ui
from tests.handles import live
from tests.samples import GIFT, HOURS, KLARNA


def test_a_cluster_found_picked_and_created_from_the_tab(serving_state, demo):
    for text in GIFT + HOURS + KLARNA:
        data_svc.add_utterance(serving_state.db, demo, text, [], "unlabelled")
    table, picker, status, found, existing = ui.find(serving_state.live, demo)
    assert "candidate intents holding" in status and len(table["value"]) == len(found) > 0
    assert picker["value"] == 1 and "track_order" in existing["choices"]
    # the new ones first, then those the model puts in an existing intent; each most coherent
    # first ("93%")
    like = [row[4].startswith("≈") for row in table["value"]]
    assert like == sorted(like) == [bool(c["resembles"]) for c in found]
    for group in (False, True):
        rows = [r for r, o in zip(table["value"], like, strict=True) if o is group]
        coherence = [float(r[1].rstrip("%")) for r in rows]
        assert coherence == sorted(coherence, reverse=True)
    assert all(f"{c['coherence']} coherent" in c["choice"] for c in found)
    # the names in the table break only after an underscore, never mid-word
    nearest = [unbroken(r[5]) for r in table["value"] if r[5] != "–"]
    assert nearest == [
        f"{c['nearest_intent']} ({c['nearest_similarity']:.2f})"
        for c in found
        if c["nearest_intent"]
    ]
    assert any("&#95;<wbr>" in r[5] for r in table["value"])
    for c in found:  # a look-alike says which intent, in the table and in the note
        said = ui.show(serving_state.maps, demo, found, c["number"])[3]
        if c["resembles"]:
            names = ", ".join(c["resembles"])
            kind = "an intent" if len(c["resembles"]) == 1 else "intents"
            assert f"≈ {names}" in c["choice"] and f"Already {kind}: {names}**" in said
        else:
            assert said.startswith("Looks new") and "≈" not in c["choice"]
    gift = next(c for c in found if "gift" in c["keywords"][:2])
    examples, name, near, note, _, _, _ = ui.show(serving_state.maps, demo, found, gift["number"])
    assert examples["value"] == [str(i) for i in gift["ids"]] and "gift" in name
    assert "nearest existing intent" in note and near["value"] == (
        gift["nearest_intent"] if gift["nearest_similarity"] >= ui.CLOSE else None
    )
    message = ui.create_from_cluster(serving_state.db, demo, examples["value"][:3], "gift_cards")
    assert message.startswith("✓ Created 'gift_cards': 3 utterance(s) labelled gift_cards")
    assert "One Undo" in message
    again = ui.create_from_cluster(serving_state.db, demo, examples["value"], "gift_cards")
    assert "already exists" in again and again.startswith("⚠")
    assert "label of 3 utterance(s)" in history.undo(serving_state.db, demo)


def test_too_few_unlabelled_utterances_say_so_in_the_status(serving_state):
    from app.services.projects.projects import new_project

    new_project(serving_state.db, "empty")
    _, _, status, found, _ = ui.find(serving_state.live, live(serving_state, "empty"))
    assert "has 0 unlabelled utterances" in status and found == []


def test_what_ifs_answer_with_an_estimate_or_a_message(serving_state, demo):
    text, table = whatif_ui.merge_whatif(
        serving_state.factories, demo, "cancel_order", "refund_status"
    )
    assert "Merging cancel_order and refund_status: estimated accuracy" in text
    assert "macro-F1" in text and table["visible"] is bool(table["value"])
    text, _ = whatif_ui.merge_whatif(serving_state.factories, demo, "track_order", "track_order")
    assert text.startswith("⚠") and "both are 'track_order'" in html.unescape(text)
    text, _ = whatif_ui.split_whatif(serving_state.factories, demo, "track_order", "2")
    assert "Splitting track_order into 2 parts" in text and "**track_order/2**" in text
    *pickers, said = intent_choices(serving_state.db, demo)
    assert all(u["choices"] for u in pickers) and said == {"__type__": "update"}  # left as is


def test_the_out_of_scope_view_shows_the_trade_off_set_in_project_settings(serving_state, demo):
    state = scope.describe(serving_state.live, demo)
    assert "Each intent keeps **95%** of its own questions." in state and "threshold" in state
    project_svc.set_settings(serving_state.db, demo, {"oos_target_recall": 0.9})
    assert "keeps **90%**" in scope.describe(serving_state.live, demo)
    project_svc.set_settings(serving_state.db, demo, {"oos_target_recall": "off"})
    assert scope.describe(serving_state.live, demo).startswith("Out-of-scope detection is off")
    assert scope.describe(serving_state.live, None) == ""
