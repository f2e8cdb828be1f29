"""The Data tab's callbacks are plain functions: called with the values the widgets hold, they
change the project through the services and say what happened."""

from __future__ import annotations

from app.ui import data_tab
from app.ui.data_tab import ALL


def _rows(ctx, project, search=""):
    """The rows of the table's first page (a search narrows it to the rows a test looks at)."""
    return data_tab.refresh(ctx, project, ALL, ALL, search)[1]


def test_refresh_filters_the_table_and_counts_what_it_shows(ctx, demo):
    everything = _rows(ctx, demo)
    some = _rows(ctx, demo, search="card")
    assert 0 < len(some) < len(everything)
    assert all("card" in r["text"].lower() for r in some)
    frame, _, caption = data_tab.refresh(ctx, demo, ALL, ALL, "card")[:3]
    assert caption == f"Rows 1–{len(some)} of {len(some)} · page 1 of 1"
    assert list(frame.columns) == ["id", "text", "intents", "split", "predicted", "score"]


def test_save_without_a_row_asks_for_one_and_changes_nothing(ctx, demo):
    before = _rows(ctx, demo)
    msg = data_tab.save(ctx, demo, None, None, "x", ["greet"], "train", False, "local")
    assert "Click a row in the table first." in msg
    assert _rows(ctx, demo) == before


def test_add_relabel_and_undo_through_the_callbacks(ctx, demo):
    msg, cleared = data_tab.add(ctx, demo, "my parcel never came", [], "unlabelled")
    assert msg.startswith("✓ Added") and cleared == ""
    row = next(
        r for r in _rows(ctx, demo, "my parcel never came") if r["text"] == "my parcel never came"
    )
    assert row["split"] == "unlabelled" and row["intents"] == []
    saved = data_tab.save(
        ctx, demo, row["id"], row["version"], row["text"], ["track_order"], "train", False, "local"
    )
    assert "track_order" in saved and "(train)" in saved
    assert "Undid" in data_tab.undo(ctx, demo)
    back = next(
        r for r in _rows(ctx, demo, "my parcel never came") if r["text"] == "my parcel never came"
    )
    assert back["intents"] == []


def test_a_stale_save_is_refused_with_what_changed(ctx, demo):
    row = next(iter(_rows(ctx, demo)))
    data_tab.save(ctx, demo, row["id"], row["version"], row["text"] + "!", [], "train", False, "a")
    msg = data_tab.save(ctx, demo, row["id"], row["version"], row["text"], [], "train", False, "b")
    assert "changed by someone else" in msg


def test_labelling_an_unlabelled_row_in_the_table_moves_it_to_train(ctx, demo):
    data_tab.add(ctx, demo, "is my parcel lost", [], "unlabelled")
    row = next(r for r in _rows(ctx, demo, "is my parcel lost") if r["text"] == "is my parcel lost")
    # the split dropdown still says `unlabelled`, as the row was loaded
    data_tab.save(
        ctx,
        demo,
        row["id"],
        row["version"],
        row["text"],
        ["track_order"],
        "unlabelled",
        False,
        "local",
    )
    saved = next(
        r for r in _rows(ctx, demo, "is my parcel lost") if r["text"] == "is my parcel lost"
    )
    assert (saved["split"], saved["intents"]) == ("train", ["track_order"])


def test_changing_a_test_row_needs_the_tick_and_a_text_fix_does_not(ctx, demo):
    row = next(r for r in _rows(ctx, demo) if r["split"] == "test")
    other = "greet" if row["intents"] != ["greet"] else "goodbye"
    args = (ctx, demo, row["id"], row["version"])
    refused = data_tab.save(*args, row["text"], [other], "test", False, "local")
    assert "is a test utterance" in refused and "Tick" in refused
    moved = data_tab.save(*args, row["text"], row["intents"], "train", False, "local")
    assert "is a test utterance" in moved
    assert next(r for r in _rows(ctx, demo) if r["id"] == row["id"]) == row  # nothing changed
    fixed = data_tab.save(*args, row["text"] + "?", row["intents"], "test", False, "local")
    assert fixed.startswith("✓ Saved")  # a typo fix keeps its intents and split
    now = next(r for r in _rows(ctx, demo) if r["id"] == row["id"])
    saved = data_tab.save(
        ctx, demo, row["id"], now["version"], now["text"], [other], "test", True, "local"
    )
    assert saved.startswith("✓ Saved") and other in saved


def test_a_bulk_label_of_the_filtered_rows_previews_then_labels_only_the_unlabelled(ctx, demo):
    from app.ui import data_bulk

    filters = (ALL, "(all)", "parcel", ALL, False, ALL, "file")  # text contains "parcel"
    matching = _rows(ctx, demo, "parcel")
    fresh = [r for r in matching if not r["intents"]]
    labelled = [r for r in matching if r["intents"] and r["intents"] != ["track_order"]]
    assert fresh and labelled  # the filter mixes both
    query_of = data_tab._query_without_page
    plan, previewed = data_bulk.preview(ctx, query_of, demo, *filters, "track_order", False)
    assert f"{len(fresh)} unlabelled will become track_order" in plan
    assert f"{len(labelled)} already labelled" in plan and "left as they are" in plan
    assert _rows(ctx, demo, "parcel") == matching  # a preview changes nothing
    msg, cleared, _ = data_bulk.label(
        ctx, query_of, demo, *filters, "track_order", False, previewed
    )
    assert f"Labelled {len(fresh)}" in msg and cleared == ""
    after = {r["id"]: r for r in _rows(ctx, demo, "parcel")}
    assert all(after[r["id"]]["intents"] == ["track_order"] for r in fresh)
    assert all(after[r["id"]]["intents"] == r["intents"] for r in labelled)
    assert "Undid label" in data_tab.undo(ctx, demo)  # one undo: the whole batch

    def state(rows):
        return {r["id"]: (r["intents"], r["split"]) for r in rows}

    assert state(_rows(ctx, demo, "parcel")) == state(matching)


def test_a_bulk_label_after_the_filters_changed_refuses_then_labels_only_the_previewed(ctx, demo):
    """The preview counted the "parcel" rows; the filter then widened to every row. Label
    must not label what the preview never showed: it refuses with a fresh preview, and the
    next press labels exactly what that preview counted."""
    from app.services import data as data_svc
    from app.ui import data_bulk

    def labels() -> dict[int, list[str]]:
        return {r["id"]: r["intents"] for r in data_svc.table(ctx, demo)}

    query_of = data_tab._query_without_page
    narrow = (ALL, "(all)", "parcel", ALL, False, ALL, "file")
    wide = (ALL, "(all)", "", ALL, False, ALL, "file")
    everything = labels()
    _, previewed = data_bulk.preview(ctx, query_of, demo, *narrow, "track_order", False)
    assert previewed is not None and previewed["change"]

    msg, fresh_plan, fresh = data_bulk.label(
        ctx, query_of, demo, *wide, "track_order", False, previewed
    )
    assert "filters changed since the preview" in msg and "nothing was labelled" in msg
    assert labels() == everything  # nothing changed
    assert fresh is not None and len(fresh["change"]) > len(previewed["change"])
    assert f"{len(fresh['change'])} unlabelled will become" in fresh_plan

    msg, _, _ = data_bulk.label(ctx, query_of, demo, *narrow, "track_order", False, previewed)
    assert f"Labelled {len(previewed['change'])} utterance(s)" in msg
    after = labels()
    changed = {i for i in after if after[i] != everything[i]}
    assert changed == set(previewed["change"])


def test_the_slots_section_saves_values_and_templates_and_says_why_it_refuses(ctx, demo):
    from app.ui import data_slots

    assert data_slots.save_slot(ctx, demo, "card", "visa\nmastercard").startswith("✓ Saved slot")
    intent = data_slots.load(ctx, demo)[2]["choices"][0]
    refused = data_slots.save_templates(ctx, demo, intent, "pay with {card} at {shop}")
    assert "slot book lacks: shop" in refused
    assert data_slots.pick_intent(ctx, demo, intent) == ""  # nothing changed
    assert "Saved 1 template" in data_slots.save_templates(ctx, demo, intent, "my {card} card")
    assert data_slots.pick_intent(ctx, demo, intent) == "my {card} card"
    assert data_slots.pick_slot(ctx, demo, "card") == "visa\nmastercard"
    frame, slots, _ = data_slots.load(ctx, demo)
    assert frame.values.tolist() == [["card", "visa, mastercard", 2]]
    assert slots["choices"] == ["card"]
    assert "named by templates" in data_slots.delete_slot(ctx, demo, "card")
    assert "listed twice" in data_slots.save_slot(ctx, demo, "card", "visa\nvisa")


def test_an_existing_intents_description_is_edited_and_a_bad_one_changes_nothing(ctx, demo):
    from app.services import data as svc
    from app.ui import data_manage

    name = svc.intent_names(ctx, demo)[0]
    msg = data_manage.describe_intent(ctx, demo, name, "  Questions about   a late parcel ")
    assert msg.startswith("✓ Described") and "'Questions about a late parcel'" in msg
    assert data_manage.intent_description(ctx, demo, name) == "Questions about a late parcel"
    too_long = data_manage.describe_intent(ctx, demo, name, "x" * 501)
    assert "at most 500 characters" in too_long and not too_long.startswith("✓")
    assert data_manage.intent_description(ctx, demo, name) == "Questions about a late parcel"
    assert "Choose an intent" in data_manage.describe_intent(ctx, demo, "", "anything")
    assert "No intent &#x27;nope&#x27;" in data_manage.describe_intent(
        ctx, demo, "nope", "anything"
    )
    assert "Cleared" in data_manage.describe_intent(ctx, demo, name, "")
    assert data_manage.intent_description(ctx, demo, name) == ""


def test_project_settings_show_every_setting_and_save_them_together(ctx, demo):
    """The Data tab's one settings section: the form shows the project's values and what each
    does; Save writes them together and says what changed; one bad value changes nothing."""
    from app.services import projects as project_svc
    from app.ui import settings_section as section

    oos_on, target, weight, encode, int8, effects = section.shown(ctx, demo)
    assert (oos_on, target, weight, encode, int8) == (True, 0.95, 1.0, False, True)
    assert "Anchors on (weight 1)" in effects and "Serving: the frozen minilm" in effects
    assert "<li><b>Out of scope:</b> Out-of-scope thresholds for a 95% in-scope recall" in effects

    status, effects = section.save(ctx, demo, False, 0.9, 1.5, True, False)
    assert status == (
        "✓ Changed oos_target_recall 0.95 → off; anchor_weight 1 → 1.5; encode_context off → on; "
        "serve_int8 on → off."
    )
    assert "Out-of-scope detection is off" in effects and "Context encoding is on" in effects
    after = project_svc.settings(ctx, demo)
    assert (after.oos_target_recall, after.anchor_weight, after.encode_context) == (None, 1.5, True)
    assert section.shown(ctx, demo)[:5] == (False, 0.95, 1.5, True, False)
    assert section.save(ctx, demo, False, 0.9, 1.5, True, False)[0] == "✓ Nothing changed."

    refused, _ = section.save(ctx, demo, True, 0.9, -2, False, True)  # a bad weight
    assert "0 or more" in refused and not refused.startswith("✓")
    assert project_svc.settings(ctx, demo) == after  # the good values were not written either
    assert "Pick a project" in section.save(ctx, None, True, 0.9, 1, False, True)[0]
    assert not section.save(ctx, "no-such-project", True, 0.9, 1, False, True)[0].startswith("✓")
    assert section.shown(ctx, None) == section.BLANK
