"""The Label tab's callbacks with the values the widgets hold: each answer is written and the
next utterance shown; multi-label projects tick intents and commit them with Enter."""

from __future__ import annotations

import dataclasses
import html
import json
import re

from app.services.labelling import data as data_svc
from app.services.projects.io import destination, import_utterances
from app.ui import queue_actions, queue_tab
from storage.utterances import NewUtterance
from tests.handles import live


def _row(serving_state, project, uid):
    return next(
        r for r in data_svc.table(serving_state.db, live(serving_state, project)) if r["id"] == uid
    )


def test_a_number_takes_that_suggestion_and_the_next_utterance_follows(serving_state, demo):
    out = queue_tab.start(serving_state.live, demo, "file", None)
    item = out.state.item
    assert f"data-item='{item.id}'" in out.card
    second = item.suggestions[1].intent
    out = queue_actions.suggestion(serving_state.live, 1, demo, out.state)
    assert second in out.message and out.state.item.id != item.id
    assert _row(serving_state, demo, item.id)["intents"] == second
    assert "1 answered this session" in out.progress


def test_undo_takes_back_this_queues_answers_one_by_one_and_shows_each_again(serving_state, demo):
    out = queue_tab.start(serving_state.live, demo, "file", None)
    first = out.state.item
    out = queue_actions.enter(serving_state.live, demo, out.state)
    second = out.state.item
    out = queue_actions.skip(serving_state.live, demo, out.state)
    third = out.state.item
    assert third.id not in (first.id, second.id)
    out = queue_actions.answer_with(serving_state.live, "delete", demo, out.state)
    # someone else's change in the project meanwhile: the queue's undo never takes it back
    shown = {first.id, second.id, out.state.item.id}
    other = [
        r
        for r in data_svc.table(serving_state.db, demo, split="unlabelled")
        if r["id"] not in shown
    ][-1]
    data_svc.label_utterance(serving_state.db, demo, other["id"], ["refund_status"])

    out = queue_actions.undo(
        serving_state.live, demo, out.state
    )  # the delete: back under its own id, on screen
    assert out.message.endswith(f"Undid: #{third.id} deleted.")
    assert (out.state.item.id, out.state.item.text) == (third.id, third.text)
    assert _row(serving_state, demo, out.state.item.id)["split"] == "unlabelled"
    out = queue_actions.undo(serving_state.live, demo, out.state)  # the skip
    assert out.message.endswith(f"Undid: #{second.id} skipped.")
    assert out.state.item.id == second.id
    out = queue_actions.undo(
        serving_state.live, demo, out.state
    )  # the label (Enter's: the flag's, if any)
    want = "out_of_scope" if first.enter_is_out_of_scope else first.suggestions[0].intent
    assert out.message.endswith(f"Undid: #{first.id} labelled {want}.")
    assert out.state.item.id == first.id
    assert _row(serving_state, demo, first.id)["split"] == "unlabelled"
    out = queue_actions.undo(
        serving_state.live, demo, out.state
    )  # nothing left here: the other change stays
    assert "Nothing left to undo in this queue" in out.message
    assert _row(serving_state, demo, other["id"])["intents"] == "refund_status"


def test_a_new_models_refresh_of_the_card_keeps_what_the_status_line_said(serving_state, demo):
    """When a version starts serving the page asks for the card's suggestions again
    (app/ui/queue_model.py). That refresh drew the status line empty: an "Undid: #…" said a
    moment before vanished (bench.beside_retrain's annotator, at a promotion). It leaves the
    status line as it is and the card on the same utterance, drawn anew."""
    from app.ui.queue_model import rescore

    out = queue_tab.start(serving_state.live, demo, "file", None)
    out = queue_actions.enter(serving_state.live, demo, out.state)
    out = queue_actions.undo(serving_state.live, demo, out.state)
    assert "Undid: #" in out.message
    again = rescore(serving_state.live, demo, out.state)
    assert again.message == {"__type__": "update"}  # gr.skip(): the output left as it is
    assert again.state.item.id == out.state.item.id
    assert again.state.seq != out.state.seq  # a new drawing: the page lets the next key go


def test_the_filter_finds_an_intent_and_enter_takes_it(serving_state, demo):
    """The card carries the project's intents, which the page matches the filter's text among
    at each key (tests/e2e/banking77/test_label_keys.py); Enter's text is matched here again."""
    out = queue_tab.start(serving_state.live, demo, "file", None)
    carried = re.search(r"data-intents='([^']*)'", out.card)
    assert carried and json.loads(html.unescape(carried[1])) == data_svc.intent_names(
        serving_state.db, demo
    )
    uid = out.state.item.id
    out = queue_actions.take_match(serving_state.live, demo, out.state, "pass reset")
    assert _row(serving_state, demo, uid)["intents"] == "account_password_reset"
    assert out.state.history[-1].action == "take"


def test_a_typed_text_that_names_no_single_intent_stores_nothing(serving_state, demo):
    out = queue_tab.start(serving_state.live, demo, "file", None)
    uid = out.state.item.id
    for typed, why in (("zzzz", "Unknown intent 'zzzz'"), ("", "Type part"), ("/", "Type part")):
        refused = queue_actions.take_match(serving_state.live, demo, out.state, typed)
        said = html.unescape(refused.message)
        assert why in said and "Nothing was stored" in said
        assert refused.state.item.id == uid and not refused.state.history
    assert _row(serving_state, demo, uid)["split"] == "unlabelled"


def test_multi_label_ticks_intents_and_enter_commits_them(serving_state):
    rows = [
        NewUtterance(f"book a room {i}", ("booking",) + (("room",) if i % 2 else ()))
        for i in range(6)
    ] + [NewUtterance(f"cancel my room {i}", ("cancel", "room")) for i in range(4)]
    rows += [NewUtterance("book me a cheap room then cancel the old one", (), "unlabelled")]
    import_utterances(serving_state.db, destination(serving_state.db, "hotel"), rows)
    out = queue_tab.start(serving_state.live, live(serving_state, "hotel"), "file", None)
    item = out.state.item
    assert item.multi_label and out.picked["visible"] is True
    names = [s.intent for s in item.suggestions]
    state = out.state.but(picked=())
    state = queue_actions.suggestion(
        serving_state.live, 0, live(serving_state, "hotel"), state
    ).state
    state = queue_actions.suggestion(
        serving_state.live, 1, live(serving_state, "hotel"), state
    ).state
    assert list(state.picked) == names[:2]  # toggled, nothing written yet
    assert _row(serving_state, "hotel", item.id)["split"] == "unlabelled"
    queue_actions.enter(serving_state.live, live(serving_state, "hotel"), state)
    saved = _row(serving_state, "hotel", item.id)
    assert saved["intents"] == "|".join(sorted(names[:2])) and saved["split"] == "train"


def _left(state) -> int:
    return (state.item is not None) + len(state.upcoming)


def test_the_review_order_counts_the_flagged_examples_left_not_the_unlabelled(serving_state, demo):
    text = "how do i reset my password"
    flipped = next(
        r for r in data_svc.table(serving_state.db, demo, search=text) if r["text"] == text
    )
    data_svc.label_utterance(serving_state.db, demo, flipped["id"], ["discount_code"])
    out = queue_tab.start(serving_state.live, demo, "mislabelled", None)
    assert out.state.item.id == flipped["id"]
    # the whole flagged list is taken at once, so what is left is known
    assert out.progress.startswith(f"**{_left(out.state)}** flagged left to review · 0 reviewed")
    assert "unlabelled" not in out.progress
    out = queue_actions.suggestion(
        serving_state.live, 0, demo, out.state
    )  # relabel it as the model suggests
    assert _row(serving_state, demo, flipped["id"])["intents"] == "account_password_reset"
    assert out.progress.startswith(f"**{_left(out.state)}** flagged left to review · 1 reviewed")
    out = queue_tab.start(serving_state.live, demo, "file", None)
    assert "unlabelled left · 0 answered" in out.progress


def test_reviewing_a_test_row_changes_it_only_on_the_same_key_twice(serving_state, demo):
    text = "how do i reset my password"
    row = next(r for r in data_svc.table(serving_state.db, demo, search=text) if r["text"] == text)
    data_svc.label_utterance(serving_state.db, demo, row["id"], ["discount_code"], split="test")
    out = queue_tab.start(serving_state.live, demo, "mislabelled", None)
    assert out.state.item.id == row["id"]
    assert "test row" in out.card
    out = queue_actions.suggestion(
        serving_state.live, 0, demo, out.state
    )  # one press: refused, nothing stored
    assert "is a test utterance" in out.message and "same key" in out.message
    assert _row(serving_state, demo, row["id"])["intents"] == "discount_code"
    assert out.state.item.id == row["id"]  # the card stays
    out = queue_actions.answer_with(
        serving_state.live, "delete", demo, out.state
    )  # another key: asks anew
    assert "is a test utterance" in out.message
    assert _row(serving_state, demo, row["id"])["intents"] == "discount_code"
    out = queue_actions.suggestion(serving_state.live, 0, demo, out.state)
    assert (
        _row(serving_state, demo, row["id"])["intents"] == "discount_code"
    )  # the delete was forgotten
    out = queue_actions.suggestion(
        serving_state.live, 0, demo, out.state
    )  # the same key again: changed
    assert (
        _row(serving_state, demo, row["id"])["intents"],
        _row(serving_state, demo, row["id"])["split"],
    ) == (
        "account_password_reset",
        "test",
    )
    assert out.state.item is None or out.state.item.id != row["id"]


def test_the_orange_button_is_what_enter_takes_and_0_is_out_of_scope(serving_state, demo):
    """Issue 65, item 5: the demo's first card ("thanks for your help!") is flagged out of scope,
    yet Enter took its first suggestion (product_availability, 0.25), the orange key: a
    newcomer's first key stored a wrong label. On a flagged card Enter follows the flag: the
    card says so and the out-of-scope key is the orange one; ``1`` and ``Shift+Enter`` still
    take the first suggestion."""
    state = queue_tab.start(serving_state.live, demo, "file", None).state
    for oos in (False, True):
        item = dataclasses.replace(state.item, out_of_scope=oos, threshold=0.9)
        out = queue_tab.render(serving_state.db, demo, state.but(item=item))
        first = "secondary" if oos else "primary"
        assert [b["variant"] for b in (out.key1, out.key2, out.key3)] == [
            first,
            "secondary",
            "secondary",
        ]
        assert out.oos_key["variant"] == ("primary" if oos else "secondary")
        assert out.enter_key["value"] == ("Enter · out_of_scope" if oos else "Enter · take 1")
        assert ("Looks out of scope" in out.card) is oos
        said = "<code>Enter</code> (or <code>0</code>) labels it out_of_scope"
        assert (said in out.card) is oos
    flagged = state.but(item=dataclasses.replace(state.item, out_of_scope=True, threshold=0.9))
    out = queue_actions.enter(serving_state.live, demo, flagged)
    assert _row(serving_state, demo, state.item.id)["intents"] == "out_of_scope", out.message
    item = out.state.item
    flagged = out.state.but(item=dataclasses.replace(item, out_of_scope=True, threshold=0.9))
    out = queue_actions.answer_with(serving_state.live, "test", demo, flagged)
    assert _row(serving_state, demo, item.id)["intents"] == item.suggestions[0].intent
    assert _row(serving_state, demo, item.id)["split"] == "test"
    third = out.state.item.id
    out = queue_actions.answer_with(serving_state.live, "oos", demo, out.state)
    assert (
        _row(serving_state, demo, third)["intents"],
        _row(serving_state, demo, third)["split"],
    ) == (
        "out_of_scope",
        "train",
    )


def test_an_empty_projects_card_points_to_the_import_and_a_finished_one_does_not(
    serving_state, demo
):
    from app.services.projects.projects import new_project

    empty = new_project(serving_state.db, "fresh")
    out = queue_tab.start(serving_state.live, live(serving_state, empty), "file", None)
    assert out.state.item is None
    assert "No utterances yet: import a file in the Data tab" in out.card

    for row in data_svc.table(
        serving_state.db, demo, split="unlabelled"
    ):  # nothing left, but not empty
        data_svc.delete_utterance(serving_state.db, demo, row["id"])
    out = queue_tab.start(serving_state.live, demo, "file", None)
    assert out.state.item is None
    assert "Nothing left to label" in out.card and "No utterances yet" not in out.card


def test_every_card_has_its_own_number_even_in_a_fresh_queue(serving_state, demo):
    """The page waits for a new ``data-seq`` to know an answer arrived: a second queue (Start
    again, a project picked) counting from 1 again could show the number it is waiting on."""
    import re

    first = queue_tab.start(serving_state.live, demo, "file", None)
    answered = queue_actions.enter(serving_state.live, demo, first.state)
    again = queue_tab.start(serving_state.live, demo, "file", None)
    seqs = [re.search(r"data-seq='(\d+)'", out.card).group(1) for out in (first, answered, again)]
    assert len(set(seqs)) == 3


def test_a_start_answered_after_a_newer_start_of_the_page_changes_nothing(serving_state, demo):
    """The page load's start (number 0) still on its way when the reviewer picked an order and
    pressed Start (number 1): whichever reaches the server first, the page keeps her order."""
    from types import SimpleNamespace

    import gradio as gr

    page = SimpleNamespace(session_hash="page-of-a-reviewer")
    mine = queue_tab.start(serving_state.live, demo, "mislabelled", None, 1, page)
    assert mine.state.how == "mislabelled"
    late = queue_tab.start(serving_state.live, demo, "useful", None, 0, page)
    assert all(isinstance(v, dict) and v.get("__type__") == gr.skip()["__type__"] for v in late)
    # another page, and a later start of this one, are started as usual
    assert queue_tab.start(
        serving_state.live, demo, "useful", None, 0, SimpleNamespace(session_hash="other")
    )
    assert queue_tab.start(serving_state.live, demo, "file", None, 2, page).state.how == "file"
