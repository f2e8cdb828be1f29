"""A scripted annotator for the Label tab (shared by tests/e2e/banking77/test_annotator.py and
bench/workbench.py): it reads the card, presses keys like a person at a set speed, and keeps what
each key meant, so every stored label can be checked against the intended one."""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from typing import Any

PROJECT = "banking77"
DELAY = 80  # ms between keys: a fast annotator
# Queries that name one intent best (tests/core/labelling/test_fuzzy.py pins the rule): a letter
# starts the filter (no letter is a command), `/` before it does the same.
FILTERS = {
    "get d": "get_disposable_virtual_card",
    "transfer n": "transfer_not_received_by_recipient",
    "pending cas": "pending_cash_withdrawal",
    "/top up f": "top_up_failed",
    "card arr": "card_arrival",
    "verify t": "verify_top_up",
    "lost ph": "lost_or_stolen_phone",
    "/declined t": "declined_transfer",
    "wrong am": "wrong_amount_of_cash_received",
    "terminate": "terminate_account",
}
# The answer keys (app/ui/queue_keys.py) by Playwright's names
TEST, NONE, OOS, SKIP, DELETE, UNDO = "Shift+Enter", "-", "0", "Space", "Delete", "Control+z"
# One round of the annotator: each entry is the keys for the card on screen.
ROUND = ["1", "2", "f", "3", "Enter", "f", "2", TEST, NONE, OOS, SKIP, "f", DELETE, UNDO, "3"]
ROUND += [UNDO, UNDO]
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
    """What the annotator meant: each utterance's intended (intents, split), by text, and the
    answers undo (``Ctrl+Z``) would take back."""

    page: Any
    delay: int = DELAY  # ms between keys
    intended: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    undo: list[tuple[str, tuple[str, str] | None]] = field(default_factory=list)
    labels: int = 0
    keys: int = 0
    flagged: int = 0
    waits_ms: list[float] = field(default_factory=list)  # last key -> the answer on screen

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
        """Wait for the answer to ``before``'s key: the card is rendered again and no answer
        is pending in the page (a new model's refresh of the card, drawn while the key waited
        behind it, is not the key's answer: assets/queue_keys.js)."""
        try:
            self.page.wait_for_function(
                "(seq) => document.querySelector('#queue-card [data-item]')?.dataset.seq !== seq"
                " && !(window.__studioQueuePending?.() > 0)",
                arg=before.seq,
                timeout=timeout,
            )
        except Exception as exc:  # say what the page showed instead
            now = self.card()
            status = self.page.inner_text("#queue-status")
            progress = self.page.inner_text("#queue-progress")
            raise AssertionError(
                f"no answer on screen to the key on card {before.seq} ({before.text!r}): it shows "
                f"card {now.seq} ({now.text!r}); status {status!r}; progress {progress!r}"
            ) from exc
        return self.card()

    def store(self, text: str, value: tuple[str, str] | None) -> None:
        self.undo.append((text, self.intended.get(text, UNLABELLED)))
        self.intended[text] = value

    def press(self, key: str, query: str = "", timeout: float = 60_000) -> Card:
        """Read the card, press ``key`` (``f``: type ``query`` into the filter, then Enter) at
        :attr:`delay` ms a key, note what that meant, and wait for the answer."""
        card = self.card()
        assert card.id != "none", "the queue ran dry"
        self.flagged += card.out_of_scope
        if card.out_of_scope:  # the hint says Enter follows it (issue 65, item 5)
            note = self.page.inner_text("#queue-card .queue-oos")
            assert "Enter (or 0) labels it out_of_scope" in note, note
        meant: dict[str, tuple[str, str] | None] = {
            "1": (card.suggestions[0], "train"),
            "2": (card.suggestions[1], "train"),
            "3": (card.suggestions[2], "train"),
            # on a card that looks out of scope, Enter follows the flag
            "Enter": ("out_of_scope", "train")
            if card.out_of_scope
            else (card.suggestions[0], "train"),
            TEST: (card.suggestions[0], "test"),
            NONE: ("", "train"),
            OOS: ("out_of_scope", "train"),
            DELETE: None,
        }
        if key == "f":
            self.page.keyboard.type(query, delay=self.delay)
            self.page.wait_for_timeout(self.delay)
            pressed = time.perf_counter()
            self.page.keyboard.press("Enter")
            self.keys += len(query) + 1
            self.store(card.text, (FILTERS[query], "train"))
        else:
            pressed = time.perf_counter()
            self.page.keyboard.press(key)
            self.keys += 1
            if key == SKIP:
                self.store(card.text, UNLABELLED)  # only shown again by undo
            elif key == UNDO:
                text, value = self.undo.pop()
                self.intended[text] = value
            else:
                self.store(card.text, meant[key])
        self.labels += key not in (SKIP, DELETE, UNDO)
        after = self.answered(card, timeout)
        self.waits_ms.append((time.perf_counter() - pressed) * 1000)
        if key == UNDO:  # the utterance undone is on screen again, and the status says what
            assert after.text == text, f"undo did not show {text!r} again (shows {after.text!r})"
            assert "Undid: #" in status(self.page)
        return after


def run(bot: Annotator, labels: int, *, between: Any = None) -> None:
    """Press :data:`ROUND` over and over until ``labels`` labels are stored (``between(key)``
    after each key, e.g. a check)."""
    queries = iter(list(FILTERS) * (labels // 2 + 1))
    while bot.labels < labels:
        for key in ROUND:
            if bot.labels >= labels:
                break
            bot.press(key, next(queries) if key == "f" else "")
            if between is not None:
                between(key)


def wrong(
    intended: dict[str, tuple[str, str] | None], stored: dict[str, tuple[str, str]]
) -> dict[str, Any]:
    """The utterances whose stored (intents, split) is not the intended one (None: deleted)."""
    return {t: (want, stored.get(t)) for t, want in intended.items() if stored.get(t) != want}


def status(page: Any) -> str:
    return html.unescape(page.inner_text("#queue-status"))


def client(server: Any) -> Any:
    from gradio_client import Client

    return Client(server.url, verbose=False)


def stored(api: Any) -> dict[str, tuple[str, str]]:
    """Every utterance of the project as stored now, read over the app's API: text -> (intents,
    split)."""
    from storage.tables import SPLITS

    rows = [  # split by split: one call answers at most 2,000 rows
        row
        for split in SPLITS
        for row in api.predict(PROJECT, "", split, "", api_name="/utterances")
    ]
    return {r["text"]: (r["intents"], r["split"]) for r in rows}
