"""The Label tab's keys: which key presses which button (:data:`KEYS`), the legend on screen
(:data:`HELP`) and the page's handler (assets/queue_keys.js) with the map filled in.

Keys (when no text box has the focus): ``1``-``3`` take a suggestion (multi-label: toggle it),
``Enter`` takes the first (multi-label: commits the ticked intents), ``Shift+Enter`` the same into
test, ``0`` out of scope, ``-`` no intent, ``Space`` skip (a team annotator's own item: her
answer), ``Delete`` delete, ``Ctrl+Z`` (``Cmd+Z``) undo this queue's last answer.

No letter is a command: 21 of BANKING77's 77 intents start with a letter that used to be one
(``t`` to test, ``o`` out of scope...), and typing such a name stored answers nobody meant. A
letter (any character that is not a key above, or ``/``) starts typing an intent's name in the
filter, where ``Enter`` takes the intent the typed text names (matched again on the server from
exactly that text; nothing matching or a tie is refused) and ``Esc`` goes back. The keys above
are all on a number pad. A name that starts with ``0``-``3`` or ``-`` is typed after ``/``.
"""

from __future__ import annotations

import json

import assets

HELP = (
    "**Keys** `1` `2` `3` take a suggestion · `Enter` the first (`Shift+Enter` into test) · "
    "`0` out of scope · `-` no intent · `Space` skip · `Del` delete · `Ctrl+Z` undo · "
    "**letters type an intent's name**, never a command: `Enter` takes the one it names, "
    "`Esc` goes back"
)

# Pressing a key presses the button with this id, keys by name as the page spells them
# (assets/queue_keys.js): no letter, since a letter starts typing an intent's name.
KEYS = {
    "1": "queue-s1",
    "2": "queue-s2",
    "3": "queue-s3",
    "Enter": "queue-enter",
    "Shift+Enter": "queue-test",
    "0": "queue-oos",
    "-": "queue-none",
    " ": "queue-skip",
    "Delete": "queue-delete",
    "Ctrl+z": "queue-undo",
}


def keys_js() -> str:
    """The keyboard handler (assets/queue_keys.js) with :data:`KEYS` filled in, and the filter's
    matching rule for the page (assets/intent_match.js)."""
    source = assets.text("queue_keys.js")
    match = assets.text("intent_match.js").strip()
    return source.replace("__KEYS__", json.dumps(KEYS)).replace("__MATCH__", match)
