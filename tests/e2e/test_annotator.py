"""A scripted annotator on the BANKING77 project (77 intents, 150 unlabelled), keyboard only at
80 ms a key: 50 labels mixing suggestions (1-3, Enter), the intent filter with and without `/`,
`n`, `t`, `o`, `s`, `d` and `u`; then every stored label is read back over the API and checked
against the one intended, computed from what the card showed when the key was pressed. 0 wrong.

Besides, each of issue 25's labelling failures is pinned where a user met it: a typed filter
commits the intent the whole text names (item 1) and refuses a tie; after a filter label the
focus is back on the card and an empty filter's Enter labels nothing (item 2); out of scope has
its own key, never Enter's or `t`'s (item 3); `u` takes back this queue's last action, shows its
utterance again and says what it undid, and a queue with nothing left to undo says so (item 7).
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field

import pytest

from tests.e2e.conftest import shot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = "banking77"
DELAY = 80  # ms between keys: a fast annotator
CARD = "#queue-card [data-item]"
# Queries that name one intent best (tests/core/labelling/test_fuzzy.py pins the rule); those
# starting with a command letter (d n o s t u) open the filter with `/`.
FILTERS = {
    "get d": "get_disposable_virtual_card",
    "/transfer n": "transfer_not_received_by_recipient",
    "pending cas": "pending_cash_withdrawal",
    "/top up f": "top_up_failed",
    "card arr": "card_arrival",
    "/verify t": "verify_top_up",
    "lost ph": "lost_or_stolen_phone",
    "/declined t": "declined_transfer",
    "wrong am": "wrong_amount_of_cash_received",
    "/terminate": "terminate_account",
}
# One round of the annotator: each entry is the keys for the card on screen.
ROUND = ["1", "2", "f", "3", "Enter", "f", "2", "t", "n", "o", "s", "f", "d", "u", "3", "u", "u"]
LABELS = 50
UNLABELLED = ("", "unlabelled")


@dataclass
class Card:
    id: str
    seq: str
    text: str
    suggestions: list[str]
    out_of_scope: bool


@dataclass
class Annotator:
    """What the annotator meant: each utterance's intended (intents, split), by text (a deleted
    utterance comes back under a new id), and the answers ``u`` would take back."""

    page: object
    intended: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    undo: list[tuple[str, tuple[str, str] | None]] = field(default_factory=list)
    labels: int = 0
    flagged: int = 0

    def card(self) -> Card:
        info = self.page.evaluate(
            """() => {
              const c = document.querySelector('#queue-card [data-item]');
              const s = [1, 2, 3].map((i) => document.querySelector('#queue-s' + i)?.innerText || '');
              return {id: c.dataset.item, seq: c.dataset.seq,
                      text: c.querySelector('.queue-text')?.innerText || '',
                      oos: !!c.querySelector('.queue-oos'), s};
            }"""
        )
        names = [t.split(" · ")[1].removeprefix("✓ ") for t in info["s"] if " · " in t]
        return Card(info["id"], info["seq"], info["text"], names, info["oos"])

    def answered(self, before: Card, timeout: float = 60_000) -> Card:
        """Wait for the answer to ``before``'s key (the card is rendered again)."""
        self.page.wait_for_function(
            "(seq) => document.querySelector('#queue-card [data-item]')?.dataset.seq !== seq",
            arg=before.seq,
            timeout=timeout,
        )
        return self.card()

    def store(self, text: str, value: tuple[str, str] | None) -> None:
        self.undo.append((text, self.intended.get(text, UNLABELLED)))
        self.intended[text] = value

    def press(self, key: str, query: str = "", timeout: float = 60_000) -> Card:
        """Read the card, press ``key`` (``f``: type ``query`` into the filter, then Enter) at
        80 ms a key, note what that meant, and wait for the answer."""
        card = self.card()
        assert card.id != "none", "the queue ran dry"
        self.flagged += card.out_of_scope
        if card.out_of_scope:  # the hint names the key of its own, never Enter's
            note = self.page.inner_text("#queue-card .queue-oos")
            assert "o labels it out_of_scope" in note and "Enter or 1-3 take an intent" in note
        meant: dict[str, tuple[str, str] | None] = {
            "1": (card.suggestions[0], "train"),
            "2": (card.suggestions[1], "train"),
            "3": (card.suggestions[2], "train"),
            "Enter": (card.suggestions[0], "train"),  # even on a card that looks out of scope
            "t": (card.suggestions[0], "test"),
            "n": ("", "train"),
            "o": ("out_of_scope", "train"),
            "d": None,
        }
        if key == "f":
            self.page.keyboard.type(query, delay=DELAY)
            self.page.wait_for_timeout(DELAY)
            self.page.keyboard.press("Enter")
            self.store(card.text, (FILTERS[query], "train"))
        else:
            self.page.keyboard.press(key)
            if key == "s":
                self.store(card.text, UNLABELLED)  # only shown again by u
            elif key == "u":
                text, value = self.undo.pop()
                self.intended[text] = value
            else:
                self.store(card.text, meant[key])
        self.labels += key not in ("s", "d", "u")
        after = self.answered(card, timeout)
        if key == "u":  # the utterance undone is on screen again, and the status says what
            assert after.text == text, f"u did not show {text!r} again (shows {after.text!r})"
            assert "Undid: #" in self.page.inner_text("#queue-status")
        return after


def _client(server):
    from gradio_client import Client

    return Client(server.url, verbose=False)


def _stored(client) -> dict[str, tuple[str, str]]:
    rows = client.predict(PROJECT, "", "", "", api_name="/utterances")
    return {r["text"]: (r["intents"], r["split"]) for r in rows}


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


def _status(page) -> str:
    return html.unescape(page.inner_text("#queue-status"))


def _focus_on_card(page) -> bool:
    return bool(page.evaluate("() => document.activeElement?.id === 'queue-card'"))


def _wrong(intended: dict[str, tuple[str, str] | None], stored: dict[str, tuple[str, str]]):
    """The utterances whose stored (intents, split) is not the intended one (None: deleted)."""
    return {t: (want, stored.get(t)) for t, want in intended.items() if stored.get(t) != want}


def test_a_typed_filter_commits_the_intent_its_whole_text_names(banking77_server, browser):
    """Item 1: typed at 80 ms a key, Enter used to take the first match of an earlier prefix
    (`/transfer n` -> transfer_timing); a tie is refused and stores nothing."""
    client = _client(banking77_server)
    context, page = _open(browser, banking77_server.url)
    bot = Annotator(page)
    try:
        for query in ("/transfer n", "get d", "pending cas"):
            bot.press("f", query)
        card = bot.card()
        page.keyboard.type("/top up b", delay=DELAY)
        page.wait_for_timeout(DELAY)
        page.keyboard.press("Enter")
        assert bot.answered(card).id == card.id  # refused: the same card, nothing stored
        said = _status(page)
        assert "'top up b' matches top_up_by_card_charge" in said and "Nothing was stored" in said
        bot.intended[card.text] = UNLABELLED
        assert not _wrong(bot.intended, _stored(client))
        shot(page, "82-annotator-tie-refused")
    finally:
        context.close()


def test_after_a_filter_label_the_keys_are_commands_again(banking77_server, browser):
    """Item 2: the focus stayed in the filter, so the next digit went into the box and the next
    Enter on the empty filter labelled age_limit. Now the card has the keys after every answer,
    and Enter on an empty filter labels nothing."""
    client = _client(banking77_server)
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
        assert not _wrong(bot.intended, _stored(client))
    finally:
        context.close()


def test_u_takes_back_this_queues_last_action_and_shows_it_again(banking77_server, browser):
    """Item 7: after d then u the card was restored but never shown again, and a second u undid
    an earlier label of somebody's. Each u takes back this queue's last action (a delete, then the
    label before it), shows its utterance and says what it undid; then there is nothing left."""
    client = _client(banking77_server)
    before = _stored(client)
    context, page = _open(browser, banking77_server.url, 1280, 720)
    bot = Annotator(page)
    try:
        labelled = bot.card()
        bot.press("1")
        deleted = bot.card()
        bot.press("d")
        assert deleted.text not in _stored(client)
        bot.press("u")  # the deleted utterance is back, on screen, under a new id
        assert f"Undid: #{deleted.id} deleted (back as #{bot.card().id})" in _status(page)
        shot(page, "83-annotator-undo-delete-1280")
        bot.press("u")  # then the label before it
        assert f"Undid: #{labelled.id} labelled {labelled.suggestions[0]}." in _status(page)
        assert bot.card().id == labelled.id
        card = bot.card()
        page.keyboard.press("u")  # nothing of this queue's is left: say so, change nothing
        bot.answered(card)
        assert "Nothing left to undo in this queue" in _status(page)
        assert _stored(client) == before
    finally:
        context.close()


def test_a_scripted_annotator_stores_fifty_labels_and_none_is_wrong(banking77_server, browser):
    """The harness: 50 labels at 80 ms a key, every kind of answer, 0 wrong."""
    client = _client(banking77_server)
    before = _stored(client)
    context, page = _open(browser, banking77_server.url)
    bot = Annotator(page)
    try:
        assert page.locator("#queue-oos").is_visible()  # out of scope: a key and a button
        queries = iter(list(FILTERS) * 10)
        started = time.perf_counter()
        while bot.labels < LABELS:
            for key in ROUND:
                if bot.labels >= LABELS:
                    break
                bot.press(key, next(queries) if key == "f" else "")
                if key == "f":  # the filter emptied and gave the keys back to the card
                    assert _focus_on_card(page), "after a filter label the focus stayed in it"
                    assert page.input_value("#queue-filter textarea, #queue-filter input") == ""
        elapsed = time.perf_counter() - started
        shot(page, "80-annotator-after-50")

        stored = _stored(client)
        wrong = _wrong(bot.intended, stored)
        assert not wrong, f"{len(wrong)} of {len(bot.intended)} stored wrong: {wrong}"
        changed = {t for t in stored if stored[t] != before.get(t)}
        assert changed <= set(bot.intended)  # nothing the annotator did not mean
        print(f"\n{bot.labels} labels in {elapsed:.0f} s; {bot.flagged} cards looked out of scope")
    finally:
        context.close()


def test_a_card_that_looks_out_of_scope_takes_suggestion_one_on_enter(banking77_server, browser):
    """Item 3 on a card the model flags: a weather question in a banking project. Its hint names
    `o`; Enter takes suggestion 1 (it used to take out_of_scope); `o` labels out_of_scope."""
    client = _client(banking77_server)
    weather = ["what's the weather like in paris tomorrow", "will it snow in oslo this weekend"]
    for text in weather:
        client.predict(PROJECT, text, [], "unlabelled", api_name="/label")
    context, page = _open(browser, banking77_server.url, 1280, 720)
    try:
        page.locator("#queue-order input").click()
        page.get_by_role("option", name="Least like anything labelled").click()
        page.locator("#queue-start").click()
        page.wait_for_function(
            "(t) => t.includes(document.querySelector('#queue-card .queue-text')?.innerText)",
            arg=weather,
        )
        bot = Annotator(page)
        card = bot.card()
        assert card.out_of_scope, "a weather question should look out of scope here"
        shot(page, "81-annotator-out-of-scope-1280")
        bot.press("Enter")
        nxt = bot.card()
        assert nxt.text in weather and nxt.out_of_scope
        bot.press("o")
        stored = _stored(client)
        assert stored[card.text] == (card.suggestions[0], "train")
        assert stored[nxt.text] == ("out_of_scope", "train")
    finally:
        context.close()
