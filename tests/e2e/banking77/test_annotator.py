"""A scripted annotator on the BANKING77 project (77 intents, 150 unlabelled), keyboard only at
80 ms a key: 50 labels mixing suggestions (1-3, Enter), the intent filter with and without `/`,
no intent (`-`), to test (`Shift+Enter`), out of scope (`0`), skip (`Space`), delete (`Delete`) and
undo (`Ctrl+Z`); then every stored label is read back over the API and checked
against the one intended, computed from what the card showed when the key was pressed. 0 wrong.

Besides, each of issue 25's labelling failures is pinned where a user met it: a typed filter
commits the intent the whole text names (item 1) and refuses a tie; after a filter label the
focus is back on the card and an empty filter's Enter labels nothing (item 2); out of scope has
its own key, never Enter's or `Shift+Enter`'s (item 3); undo takes back this queue's last action, shows its
utterance again and says what it undid, and a queue with nothing left to undo says so (item 7).
"""

from __future__ import annotations

import time

import pytest

from tests.e2e import annotator as a
from tests.e2e.annotator import DELAY, DELETE, SKIP, UNDO, UNLABELLED, Annotator
from tests.e2e.conftest import SHOTS, shot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = "banking77"
LABELS = 50


def _open(browser, url: str, width: int = 1440, height: int = 900):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(url)
    page.wait_for_selector("#queue-card [data-item]:not([data-item='none'])")
    page.wait_for_function(
        "() => document.querySelector('#queue-progress')?.innerText?.includes('unlabelled left')"
    )
    return context, page


def _says_progress(page, words: str) -> None:
    page.wait_for_function(
        "(w) => document.querySelector('#queue-progress')?.innerText?.includes(w)", arg=words
    )


def _focus_on_card(page) -> bool:
    return bool(page.evaluate("() => document.activeElement?.id === 'queue-card'"))


def test_a_typed_filter_commits_the_intent_its_whole_text_names(banking77_server, browser):
    """Item 1: typed at 80 ms a key, Enter used to take the first match of an earlier prefix
    (`/transfer n` -> transfer_timing); a tie is refused and stores nothing. (Issue 47: typed
    without the `/`, `t` and `n` are letters of the name, never commands.)"""
    api = a.client(banking77_server)
    context, page = _open(browser, banking77_server.url)
    bot = Annotator(page)
    try:
        for query in ("transfer n", "get d", "pending cas"):
            bot.press("f", query)
        card = bot.card()
        page.keyboard.type("/top up b", delay=DELAY)
        page.wait_for_timeout(DELAY)
        page.keyboard.press("Enter")
        assert bot.answered(card).id == card.id  # refused: the same card, nothing stored
        said = a.status(page)
        assert "'top up b' matches top_up_by_card_charge" in said and "Nothing was stored" in said
        bot.intended[card.text] = UNLABELLED
        assert not a.wrong(bot.intended, a.stored(api))
        shot(page, "82-annotator-tie-refused")
    finally:
        context.close()


def test_after_a_filter_label_the_keys_are_commands_again(banking77_server, browser):
    """Item 2: the focus stayed in the filter, so the next digit went into the box and the next
    Enter on the empty filter labelled age_limit. Now the card has the keys after every answer,
    and Enter on an empty filter labels nothing."""
    api = a.client(banking77_server)
    context, page = _open(browser, banking77_server.url)
    bot = Annotator(page)
    try:
        bot.press("f", "card arr")
        assert _focus_on_card(page), "after a filter label the focus stayed in the filter"
        bot.press("2", timeout=30_000)  # pressed as soon as the next card shows
        card = bot.card()
        page.keyboard.press("/")  # the filter, empty: Enter goes back to the card, labels nothing
        page.wait_for_timeout(DELAY)
        page.keyboard.press("Enter")
        page.wait_for_timeout(2000)
        assert bot.card().seq == card.seq and _focus_on_card(page)
        bot.intended[card.text] = UNLABELLED
        assert not a.wrong(bot.intended, a.stored(api))
    finally:
        context.close()


def test_undo_takes_back_this_queues_last_action_and_shows_it_again(banking77_server, browser):
    """Item 7: after a delete then undo the card was restored but never shown again, and a second
    undo undid an earlier label of somebody's. Each undo takes back this queue's last action (a
    delete, then the label before it), shows its utterance and says what it undid; then there is
    nothing left. Issue 47, item 6: the deleted utterance comes back under its own id."""
    api = a.client(banking77_server)
    before = a.stored(api)
    context, page = _open(browser, banking77_server.url, 1280, 720)
    bot = Annotator(page)
    try:
        labelled = bot.card()
        bot.press("1")
        # Item 9: at 1280x720 the key row and the status line show without scrolling
        for selector in ("#queue-keys", "#queue-status"):
            box = page.locator(selector).bounding_box()
            assert box and box["y"] + box["height"] <= 720, f"{selector} is below the fold"
        assert "✓ #" in a.status(page)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "84-label-tab-1280x720.png"))  # the viewport only
        deleted = bot.card()
        bot.press(DELETE)
        assert deleted.text not in a.stored(api)
        bot.press(UNDO)  # the deleted utterance is back, on screen, under its own id
        assert a.status(page).endswith(f"Undid: #{deleted.id} deleted.")
        assert (bot.card().id, bot.card().text) == (deleted.id, deleted.text)
        row = next(
            r
            for r in api.predict(PROJECT, "", "", "", api_name="/utterances")
            if r["text"] == deleted.text
        )
        assert row["id"] == int(deleted.id)
        shot(page, "83-annotator-undo-delete-1280")
        bot.press(UNDO)  # then the label before it
        assert f"Undid: #{labelled.id} labelled {labelled.suggestions[0]}." in a.status(page)
        assert bot.card().id == labelled.id
        card = bot.card()
        page.keyboard.press(UNDO)  # nothing of this queue's is left: say so, change nothing
        bot.answered(card)
        assert "Nothing left to undo in this queue" in a.status(page)
        assert a.stored(api) == before
    finally:
        context.close()


def test_a_scripted_annotator_stores_fifty_labels_and_none_is_wrong(banking77_server, browser):
    """The harness: 50 labels at 80 ms a key, every kind of answer, 0 wrong."""
    api = a.client(banking77_server)
    before = a.stored(api)
    context, page = _open(browser, banking77_server.url)
    bot = Annotator(page)
    try:
        assert page.locator("#queue-oos").is_visible()  # out of scope: a key and a button

        def filter_gave_the_keys_back(key: str) -> None:
            if key == "f":
                assert _focus_on_card(page), "after a filter label the focus stayed in it"
                assert page.input_value("#queue-filter textarea, #queue-filter input") == ""

        started = time.perf_counter()
        a.run(bot, LABELS, between=filter_gave_the_keys_back)
        elapsed = time.perf_counter() - started
        shot(page, "80-annotator-after-50")

        now = a.stored(api)
        bad = a.wrong(bot.intended, now)
        assert not bad, f"{len(bad)} of {len(bot.intended)} stored wrong: {bad}"
        changed = {t for t in now if now[t] != before.get(t)}
        assert changed <= set(bot.intended)  # nothing the annotator did not mean
        print(f"\n{bot.labels} labels in {elapsed:.0f} s; {bot.flagged} cards looked out of scope")
    finally:
        context.close()


def test_a_card_that_looks_out_of_scope_takes_out_of_scope_on_enter(banking77_server, browser):
    """A card the model flags: a weather question in a banking project. Enter follows the flag
    and the card says so (issue 65, item 5: it took suggestion 1, a wrong label, on a card that
    said it looked out of scope); `1` takes suggestion 1."""
    api = a.client(banking77_server)
    weather = ["what's the weather like in paris tomorrow", "will it snow in oslo this weekend"]
    for text in weather:
        api.predict(PROJECT, text, [], "unlabelled", api_name="/label")
    context, page = _open(browser, banking77_server.url, 1280, 720)
    try:
        page.locator("#queue-order input").click()
        page.get_by_role("option", name="Least like anything labelled").click()
        # the reorder's own card: the page load's may show a weather card too, and a key pressed
        # on it before the reorder's render came took that render for its answer (failed twice)
        before = Annotator(page).card().seq
        page.locator("#queue-start").click()
        page.wait_for_function(
            "([t, seq]) => { const c = document.querySelector('#queue-card [data-item]');"
            " return c?.dataset.seq !== seq"
            " && t.includes(c.querySelector('.queue-text')?.innerText); }",
            arg=[weather, before],
        )
        bot = Annotator(page)
        card = bot.card()
        assert card.out_of_scope, "a weather question should look out of scope here"
        shot(page, "81-annotator-out-of-scope-1280")
        assert page.inner_text("#queue-enter").strip() == "Enter · out_of_scope"
        bot.press("Enter")
        nxt = bot.card()
        assert nxt.text in weather and nxt.out_of_scope
        bot.press("1")
        now = a.stored(api)
        said = a.status(page)
        assert now[card.text] == ("out_of_scope", "train"), said
        assert now[nxt.text] == (nxt.suggestions[0], "train"), said
        # give the session's project its weather questions back unlabelled: a later test asks
        # the Try tab about the weather (a weather question labelled an intent would answer it)
        bot.press(UNDO)
        bot.press(UNDO)
        now = a.stored(api)
        assert now[card.text] == now[nxt.text] == a.UNLABELLED, a.status(page)
    finally:
        context.close()


def test_a_test_row_in_the_review_order_changes_only_on_the_same_key_twice(
    banking77_server, browser
):
    """Item 8 in the Label tab: the *likely mislabelled* order shows labelled rows, test rows
    among them, and one key used to relabel a test row (the accuracy then follows the model).
    The card says it is a test row; the first key stores nothing and says so; the same key
    again changes it."""
    api = a.client(banking77_server)
    text = "my new card still has not arrived, it has been two weeks"
    api.predict(PROJECT, text, ["exchange_rate"], "test", api_name="/label")
    context, page = _open(browser, banking77_server.url, 1280, 720)
    try:
        page.locator("#queue-order input").click()
        page.get_by_role("option", name="Likely mislabelled (review labelled)").click()
        page.locator("#queue-start").click()
        _says_progress(page, "flagged left to review")
        bot = Annotator(page)
        card = bot.card()
        # labels the other tests gave (2 and 3 on purpose) may be flagged first: skip them
        for _ in range(80):
            if card.text == text:
                break
            page.keyboard.press(SKIP)
            card = bot.answered(card)
        assert card.text == text, "the wrong test label was not flagged for review"
        assert "test row" in page.inner_text("#queue-card")
        page.keyboard.press("1")
        again = bot.answered(card)
        assert again.text == text and "is a test utterance" in a.status(page)
        assert a.stored(api)[text] == ("exchange_rate", "test")
        shot(page, "82-annotator-test-row-1280")
        page.keyboard.press("1")
        bot.answered(again)
        assert a.stored(api)[text] == (card.suggestions[0], "test")
        assert card.suggestions[0] != "exchange_rate"
    finally:
        context.close()


def test_keys_typed_ahead_are_each_answered_in_turn(banking77_server, browser):
    """A fast annotator presses the next keys before their cards are on screen: each waits for
    the answer before it (queue_keys.js) and none is dropped. Gradio skips a click on a button
    whose last event has not ended (its default trigger mode, 'once'), and a key held back is
    pressed the moment the answer shows, before that event ends: it was lost."""
    keys = 8
    api = a.client(banking77_server)
    before = a.stored(api)
    context, page = _open(browser, banking77_server.url)
    try:
        first = Annotator(page).card()
        for _ in range(keys):
            page.keyboard.press("1", delay=DELAY)
        _says_progress(page, f"{keys} answered this session")
        page.wait_for_timeout(1000)  # a key answered twice would show by now
        assert f"{keys} answered this session" in page.inner_text("#queue-progress")
        after = a.stored(api)
        labelled = [t for t, v in after.items() if v != before.get(t) and v[0] not in UNLABELLED]
        assert len(labelled) == keys
        assert after[first.text] == (first.suggestions[0], "train")
    finally:
        context.close()


def test_a_double_click_on_a_suggestion_answers_one_card(banking77_server, browser):
    """The server runs every answer's click (keys typed ahead must not be dropped), so the page
    drops a click made while an answer is on its way: a double click never labels the next card
    too, with a suggestion its annotator never saw."""
    context, page = _open(browser, banking77_server.url)
    try:
        bot = Annotator(page)
        card = bot.card()
        page.locator("#queue-s1").dblclick()
        bot.answered(card)
        page.wait_for_timeout(1500)  # a second answer would be on screen by now
        assert "1 answered this session" in page.inner_text("#queue-progress")
    finally:
        context.close()
