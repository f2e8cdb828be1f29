"""The Data tab's callbacks are plain functions: called with the values the widgets hold, they
change the project through the services and say what happened."""

from __future__ import annotations

import re

from app.ui import activity_tab, data_tab
from app.ui.data_tab import ALL, read_filters
from tests.handles import live


def _widgets(search="", split=ALL):
    """The filter widgets' values: text contains ``search``."""
    return (ALL, split, search, ALL, False, ALL, "file")


def _query(search="", split=ALL):
    """The filters as the table reads them: text contains ``search``."""
    return read_filters(*_widgets(search, split))


def _rows(serving_state, project, search=""):
    """The rows of the table's first page (a search narrows it to the rows a test looks at)."""
    return data_tab.refresh(serving_state.live, live(serving_state, project), _query(search)).rows


def _token(preview_html: str) -> str:
    """The token the page reads off the preview when Label is pressed."""
    found = re.search(r"data-token='(\w+)'", preview_html)
    return found.group(1) if found else ""


def test_refresh_filters_the_table_and_counts_what_it_shows(serving_state, demo):
    everything = _rows(serving_state, demo)
    some = _rows(serving_state, demo, search="card")
    assert 0 < len(some) < len(everything)
    assert all("card" in r["text"].lower() for r in some)
    view = data_tab.refresh(serving_state.live, demo, _query("card"))
    assert view.caption == f"Rows 1–{len(some)} of {len(some)} · page 1 of 1"
    assert list(view.table.columns) == ["id", "text", "intents", "split", "predicted", "score"]


def test_save_without_a_row_asks_for_one_and_changes_nothing(serving_state, demo):
    before = _rows(serving_state, demo)
    msg = data_tab.save(serving_state.db, demo, None, None, "x", ["greet"], "train", False, "local")
    assert "Click a row in the table first." in msg
    assert _rows(serving_state, demo) == before


def test_add_relabel_and_undo_through_the_callbacks(serving_state, demo):
    msg, cleared = data_tab.add(serving_state.db, demo, "my parcel never came", [], "unlabelled")
    assert msg.startswith("✓ Added") and cleared == ""
    row = next(
        r
        for r in _rows(serving_state, demo, "my parcel never came")
        if r["text"] == "my parcel never came"
    )
    assert row["split"] == "unlabelled" and row["intents"] == []
    saved = data_tab.save(
        serving_state.db,
        demo,
        row["id"],
        row["version"],
        row["text"],
        ["track_order"],
        "train",
        False,
        "local",
    )
    assert "track_order" in saved and "(train)" in saved
    # the Activity tab says which intent the row was given, the name breaking only at "_"
    table, rows, _ = activity_tab.show(serving_state.db, demo)
    assert rows[0]["example"] == "my parcel never came" and rows[0]["intents"] == "track_order"
    assert table["intents"][0] == "track&#95;<wbr>order"
    assert "Undid" in data_tab.undo(serving_state.db, demo)
    back = next(
        r
        for r in _rows(serving_state, demo, "my parcel never came")
        if r["text"] == "my parcel never came"
    )
    assert back["intents"] == []


def test_a_stale_save_is_refused_with_what_changed(serving_state, demo):
    row = next(iter(_rows(serving_state, demo)))
    data_tab.save(
        serving_state.db,
        demo,
        row["id"],
        row["version"],
        row["text"] + "!",
        [],
        "train",
        False,
        "a",
    )
    msg = data_tab.save(
        serving_state.db, demo, row["id"], row["version"], row["text"], [], "train", False, "b"
    )
    assert "changed by someone else" in msg


def test_labelling_an_unlabelled_row_in_the_table_moves_it_to_train(serving_state, demo):
    data_tab.add(serving_state.db, demo, "is my parcel lost", [], "unlabelled")
    row = next(
        r
        for r in _rows(serving_state, demo, "is my parcel lost")
        if r["text"] == "is my parcel lost"
    )
    # the split dropdown still says `unlabelled`, as the row was loaded
    data_tab.save(
        serving_state.db,
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
        r
        for r in _rows(serving_state, demo, "is my parcel lost")
        if r["text"] == "is my parcel lost"
    )
    assert (saved["split"], saved["intents"]) == ("train", ["track_order"])


def test_changing_a_test_row_needs_the_tick_and_a_text_fix_does_not(serving_state, demo):
    row = next(r for r in _rows(serving_state, demo) if r["split"] == "test")
    other = "track_order" if row["intents"] != ["track_order"] else "refund_status"
    args = (serving_state.db, demo, row["id"], row["version"])
    refused = data_tab.save(*args, row["text"], [other], "test", False, "local")
    assert "is a test utterance" in refused and "Tick" in refused
    moved = data_tab.save(*args, row["text"], row["intents"], "train", False, "local")
    assert "is a test utterance" in moved
    assert (
        next(r for r in _rows(serving_state, demo) if r["id"] == row["id"]) == row
    )  # nothing changed
    fixed = data_tab.save(*args, row["text"] + "?", row["intents"], "test", False, "local")
    assert fixed.startswith("✓ Saved")  # a typo fix keeps its intents and split
    now = next(r for r in _rows(serving_state, demo) if r["id"] == row["id"])
    saved = data_tab.save(
        serving_state.db,
        demo,
        row["id"],
        now["version"],
        now["text"],
        [other],
        "test",
        True,
        "local",
    )
    assert saved.startswith("✓ Saved") and other in saved


def test_a_bulk_label_of_the_filtered_rows_previews_then_labels_only_the_unlabelled(
    serving_state, demo
):
    from app.ui import data_bulk

    matching = _rows(serving_state, demo, "parcel")
    fresh = [r for r in matching if not r["intents"]]
    labelled = [r for r in matching if r["intents"] and r["intents"] != ["track_order"]]
    assert fresh and labelled  # the filter mixes both
    plan, previews = data_bulk.preview(
        serving_state.live, demo, _query("parcel"), "track_order", False, {}
    )
    assert f"{len(fresh)} unlabelled will become track_order" in plan
    assert f"{len(labelled)} already labelled" in plan and "left as they are" in plan
    assert _rows(serving_state, demo, "parcel") == matching  # a preview changes nothing
    msg, cleared, _ = data_bulk.label(
        serving_state.live, demo, *_widgets("parcel"), "track_order", False, previews, _token(plan)
    )
    assert f"Labelled {len(fresh)}" in msg and not _token(cleared)
    after = {r["id"]: r for r in _rows(serving_state, demo, "parcel")}
    assert all(after[r["id"]]["intents"] == ["track_order"] for r in fresh)
    assert all(after[r["id"]]["intents"] == r["intents"] for r in labelled)
    assert "Undid label" in data_tab.undo(serving_state.db, demo)  # one undo: the whole batch

    def state(rows):
        return {r["id"]: (r["intents"], r["split"]) for r in rows}

    assert state(_rows(serving_state, demo, "parcel")) == state(matching)


def test_label_applies_the_preview_on_screen_and_nothing_while_a_new_one_is_counted(
    serving_state, demo
):
    """The preview counted the "parcel" rows; the filter then widened to every row and the
    server counted that preview too. A click while the page shows no preview (it is being
    counted) labels nothing; a click with the "parcel" preview and filters on screen labels
    exactly what it said, never the wider rows the server counted since; pressed again, it
    labels nothing."""
    from app.services.labelling import data as data_svc
    from app.ui import data_bulk

    def labels() -> dict[int, list[str]]:
        return {r["id"]: r["intents"] for r in data_svc.table(serving_state.db, demo)}

    def press(search: str, token: str, kept):
        return data_bulk.label(
            serving_state.live, demo, *_widgets(search), "track_order", False, kept, token
        )

    everything = labels()
    narrow, previews = data_bulk.preview(
        serving_state.live, demo, _query("parcel"), "track_order", False, {}
    )
    wide, previews = data_bulk.preview(
        serving_state.live, demo, _query(""), "track_order", False, previews
    )
    assert _token(narrow) and _token(wide) and _token(narrow) != _token(wide)

    msg, _, previews = press("", "", previews)  # the new preview is still being counted
    assert "still being counted" in msg and "nothing was labelled" in msg
    assert labels() == everything

    said = int(re.search(r"(\d+) unlabelled will become", narrow).group(1))
    msg, _, previews = press("parcel", _token(narrow), previews)
    assert f"Labelled {said} utterance(s)" in msg
    after = labels()
    changed = {i for i in after if after[i] != everything[i]}
    assert len(changed) == said
    texts = {r["id"]: r["text"] for r in data_svc.table(serving_state.db, demo)}
    assert all("parcel" in texts[i].lower() for i in changed)
    msg, _, _ = press("parcel", _token(narrow), previews)  # once only
    assert "nothing was labelled" in msg and labels() == after


def test_a_filter_typed_but_not_submitted_refuses_the_label_and_counts_it(serving_state, demo):
    """The preview and the table show the "parcel" rows; "card" was typed in the filter but not
    submitted: a Label press labels nothing and the preview of what the filters now say shows."""
    from app.services.labelling import data as data_svc
    from app.ui import data_bulk

    before = {r["id"]: r["intents"] for r in data_svc.table(serving_state.db, demo)}
    shown, previews = data_bulk.preview(
        serving_state.live, demo, _query("parcel"), "track_order", False, {}
    )
    msg, again, _ = data_bulk.label(
        serving_state.live, demo, *_widgets("card"), "track_order", False, previews, _token(shown)
    )
    assert "changed since the preview" in msg and "nothing was labelled" in msg
    assert {r["id"]: r["intents"] for r in data_svc.table(serving_state.db, demo)} == before
    cards = [r for r in _rows(serving_state, demo, "card") if not r["intents"]]
    assert f"{len(cards)} unlabelled will become track_order" in again


def test_rows_labelled_after_the_preview_refuse_the_label_and_show_it_again(serving_state, demo):
    from app.services.labelling import data as data_svc
    from app.ui import data_bulk

    plan, previews = data_bulk.preview(
        serving_state.live, demo, _query("parcel"), "track_order", False, {}
    )
    first = next(r for r in _rows(serving_state, demo, "parcel") if not r["intents"])
    data_svc.label_utterance(
        serving_state.db, demo, first["id"], ["refund_status"]
    )  # someone, meanwhile
    before = {r["id"]: r["intents"] for r in data_svc.table(serving_state.db, demo)}
    msg, again, _ = data_bulk.label(
        serving_state.live, demo, *_widgets("parcel"), "track_order", False, previews, _token(plan)
    )
    assert "Preview again. Nothing was changed." in msg
    assert {r["id"]: r["intents"] for r in data_svc.table(serving_state.db, demo)} == before
    assert _token(again) and _token(again) != _token(plan)  # the new preview, on screen


def test_the_slots_section_saves_values_and_templates_and_says_why_it_refuses(serving_state, demo):
    from app.ui import data_slots

    assert data_slots.save_slot(serving_state.db, demo, "card", "visa\nmastercard").startswith(
        "✓ Saved slot"
    )
    intent = data_slots.load(serving_state.db, demo)[2]["choices"][0]
    refused = data_slots.save_templates(serving_state.db, demo, intent, "pay with {card} at {shop}")
    assert "slot book lacks: shop" in refused
    assert data_slots.pick_intent(serving_state.db, demo, intent) == ""  # nothing changed
    assert "Saved 1 template" in data_slots.save_templates(
        serving_state.db, demo, intent, "my {card} card"
    )
    assert data_slots.pick_intent(serving_state.db, demo, intent) == "my {card} card"
    assert data_slots.pick_slot(serving_state.db, demo, "card") == "visa\nmastercard"
    frame, slots, _ = data_slots.load(serving_state.db, demo)
    assert frame.values.tolist() == [["card", "visa, mastercard", 2]]
    assert slots["choices"] == ["card"]
    assert "named by templates" in data_slots.delete_slot(serving_state.db, demo, "card")
    assert "listed twice" in data_slots.save_slot(serving_state.db, demo, "card", "visa\nvisa")


def test_an_existing_intents_description_is_edited_and_a_bad_one_changes_nothing(
    serving_state, demo
):
    from app.services.labelling import data as svc
    from app.ui import data_manage

    name = svc.intent_names(serving_state.db, demo)[0]
    msg = data_manage.describe_intent(
        serving_state.db, demo, name, "  Questions about   a late parcel "
    )
    assert msg.startswith("✓ Described") and "'Questions about a late parcel'" in msg
    assert (
        data_manage.intent_description(serving_state.db, demo, name)
        == "Questions about a late parcel"
    )
    too_long = data_manage.describe_intent(serving_state.db, demo, name, "x" * 501)
    assert "at most 500 characters" in too_long and not too_long.startswith("✓")
    assert (
        data_manage.intent_description(serving_state.db, demo, name)
        == "Questions about a late parcel"
    )
    assert "Choose an intent" in data_manage.describe_intent(serving_state.db, demo, "", "anything")
    assert "No intent &#x27;nope&#x27;" in data_manage.describe_intent(
        serving_state.db, demo, "nope", "anything"
    )
    assert "Cleared" in data_manage.describe_intent(serving_state.db, demo, name, "")
    assert data_manage.intent_description(serving_state.db, demo, name) == ""


def test_project_settings_show_every_setting_and_save_them_together(serving_state, demo):
    """The Data tab's one settings section: the form shows the project's values and what each
    does; Save writes them together and says what changed; one bad value changes nothing."""
    from app.services.projects import projects as project_svc
    from app.ui import settings_section as section

    watching = serving_state.live.auto_retrain
    serving_state.live.auto_retrain = True  # a deployment whose workers retrain by themselves
    try:
        oos_on, target, calibration, weight, encode, int8, auto, after_n, encoder, keep, effects = (
            section.shown(serving_state.live, demo)
        )
    finally:
        serving_state.live.auto_retrain = watching
    assert keep == 3  # the newest versions that keep their files
    assert (oos_on, target, calibration, weight, encode, int8, auto, after_n) == (
        True,
        0.95,
        "auto",
        1.0,
        False,
        True,
        True,
        20,
    )
    assert encoder["value"] == "minilm" and "minilm" in encoder["choices"]
    assert "Anchors on (weight 1)" in effects and "Serving: the frozen minilm" in effects
    assert "<li><b>Out of scope:</b> Out-of-scope thresholds for a 95% in-scope recall" in effects
    assert "<li><b>Calibration:</b> Auto: quick on this CPU" in effects
    assert "Held-out would take about 4x a retrain&#x27;s training on this CPU" in effects
    assert "<li><b>Base encoder:</b> MiniLM (384-d) is the default on a CPU" in effects
    assert (
        "<li><b>Automatic retrain:</b> On: once the changes since the last retrain weigh 20 "
        in effects
    )

    status, effects = section.save(
        serving_state.live, demo, False, 0.9, "held-out", 1.5, True, False
    )
    assert status == (
        "✓ Changed oos_target_recall 0.95 → off; anchor_weight 1 → 1.5; encode_context off → on; "
        "serve_int8 on → off; oos_calibration auto → held-out."
    )
    assert "Out-of-scope detection is off" in effects and "Context encoding is on" in effects
    after = project_svc.settings(serving_state.db, demo)
    assert (after.oos_target_recall, after.anchor_weight, after.encode_context) == (None, 1.5, True)
    assert after.oos_calibration == "held-out"
    assert section.shown(serving_state.live, demo)[:6] == (
        False,
        0.95,
        "held-out",
        1.5,
        True,
        False,
    )
    # an encoder this machine does not have is refused, and nothing else is written with it
    from core.encoding.registry import installed

    absent = "no-such-encoder" if installed("mpnet") else "mpnet"
    refused, _ = section.save(
        serving_state.live, demo, True, 0.9, "quick", 2, True, False, True, 20, absent
    )
    assert ("not installed" in refused or "Unknown encoder" in refused) and not refused.startswith(
        "✓"
    )
    assert project_svc.settings(serving_state.db, demo) == after
    same = section.save(serving_state.live, demo, False, 0.9, "held-out", 1.5, True, False)
    assert same[0] == "✓ Nothing changed."

    refused, _ = section.save(
        serving_state.live, demo, True, 0.9, "quick", -2, False, True
    )  # a bad weight
    assert "0 or more" in refused and not refused.startswith("✓")
    assert (
        project_svc.settings(serving_state.db, demo) == after
    )  # the good values were not written either
    assert (
        "Pick a project"
        in section.save(serving_state.live, None, True, 0.9, None, 1, False, True)[0]
    )
    assert section.shown(serving_state.live, None) == section.BLANK


def test_an_import_into_a_new_name_empties_the_table_and_names_that_project_at_once(
    serving_state, demo, tmp_path
):
    """Issue 47 item 7: after the import's message, the table and the summary showed the last
    project for seconds (until the refreshes queued behind it had run)."""
    from app.ui import data_manage

    src = tmp_path / "fresh.csv"
    src.write_text("text,label\nwhere is my card,card_arrival\nrate today?,exchange_rate\n")
    status, picker, table, line, summary = data_manage.do_import(
        serving_state, live(serving_state, demo), str(src), "fresh", True
    )
    assert "Imported 2" in status and picker["value"] == "fresh"
    assert table.empty and list(table.columns) == data_tab.HEADERS
    assert line == "Loading fresh…"
    assert summary.startswith("**fresh**") and "2 intents" in summary
    # into the project on screen: the refresh that follows shows its rows, nothing is emptied
    again, _, *kept = data_manage.do_import(
        serving_state, live(serving_state, "fresh"), str(src), "", True
    )
    assert "updated" in again and kept == [{"__type__": "update"}] * 3


# A project and an intent named as Markdown and HTML (a bundle's manifest names its project).
MARKUP = "[Sign in](https://e.example) ![x](https://e.example/p) <img src=//e.example> **a** `c` www.e.example"


def _rendered(markdown: str) -> str:
    """The HTML a CommonMark renderer makes of ``markdown`` (what the page shows)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("strikethrough").render(markdown)


def test_names_are_plain_text_in_the_header_and_status_lines(serving_state):
    """Issue 56, row 3: the header rendered a project's name as Markdown/HTML (a bundle named
    its project with a "Sign in again" link to another site and an image fetched at once), and
    status lines quoting names were not escaped. Both show the name as the characters it is."""
    import html

    from app.services.projects.projects import new_project
    from app.ui.common import ok
    from app.ui.summary import summary_line

    name = new_project(serving_state.db, MARKUP)
    header = _rendered(
        summary_line(serving_state.db, live(serving_state, name).handle(), team=False)
    )
    status = _rendered(ok(f"Opened as read-only project {name!r}.", notify=False))
    for shown in (header, status):
        assert "<a " not in shown and "<img" not in shown and "<em>" not in shown, shown
        assert "<code>" not in shown
        assert html.escape(MARKUP, quote=False) in shown
    assert header.count("<strong>") == 1  # the name's own bold, nothing from inside it


def test_explanation_cards_show_texts_and_names_as_typed():
    """Issue 56, rows 3 and 12: the Try and Map tabs' cards escaped HTML but not Markdown (a
    text ``[Sign in](…)`` was a link), and turned ``*…*`` inside a quoted text into bold."""
    from app.ui.map_tab import evidence_markdown
    from app.ui.try_tab import explanation_markdown
    from core.retrieval.explain import explain
    from core.retrieval.knn import IntentScore, Neighbour, Prediction

    text = f"{{{{7*7}}}} {MARKUP}"
    near = Neighbour(7, text, ("pri*ce",), 0.83)
    other = Neighbour(8, "how long does delivery take", ("delivery",), 0.71)
    pred = Prediction(
        [IntentScore("pri*ce", 0.83, near), IntentScore("delivery", 0.7, other)], [near, other]
    )
    ex = explain(text, pred).to_dict()
    cards = {
        "map": evidence_markdown({**ex, "id": 7, "split": "train", "gold": ["pri*ce"]}),
        "try": explanation_markdown(
            {"intents": [{}], "explanation": ex, "score": 0.8, "margin": 0.1, "labels": ["pri*ce"]}
        ),
    }
    for where, card in cards.items():
        shown = _rendered(card)
        assert "<a " not in shown and "<img" not in shown and "<em>" not in shown, where
        assert "{{7*7}}" in shown and "<strong>pri*ce</strong>" in shown, where
