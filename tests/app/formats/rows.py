"""Rows every format test writes and reads: multi-label, test split, odd names, unlabelled."""

from __future__ import annotations

from hypothesis import strategies as st

from app.formats import Row
from storage.names import name_problem
from storage.texts import nfc
from storage.utterances import is_blank

ROWS = [
    Row("hello there", ("greet",)),
    Row("hey", ("greet",)),
    Row("how much do I have and send 20 to Ana", ("check_balance", "transfer_money")),
    Row("see you later", ("goodbye",)),
    Row("bye for now", ("goodbye",), "test"),
    Row("where is card/lost?", ("card/lost",)),
    Row("yes", ("yes",)),
    Row('quote "marks" and: colons # hash', ("odd name: with colon",)),
    Row("not labelled yet", (), "unlabelled"),
]
LABELLED = [r for r in ROWS if r.labels]


def key(rows):
    """Rows in a fixed order, to compare what was written with what was read."""
    return sorted(rows, key=lambda r: (r.text, r.labels, r.split))


_name = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs", "Cc", "Cf", "Zl", "Zp"), blacklist_characters="|+"
        ),
        min_size=1,
        max_size=20,
    )
    .map(lambda t: nfc(t).strip())  # names are stored NFC, without invisible characters
    .filter(lambda t: name_problem(t) is None)  # and with something visible (storage.names)
)
_text = (
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp", "Zs")) | st.just(" "),
        min_size=1,
        max_size=60,
    )
    .map(lambda t: nfc(t).strip())  # texts are stored NFC
    .filter(lambda t: not is_blank(t) and "[" not in t)  # nothing-visible text is refused
)
# Labelled rows (text -> (intents, split)) that every format must round-trip.
LABELLED_ROWS = st.dictionaries(
    _text,
    st.tuples(st.sets(_name, min_size=1, max_size=2), st.sampled_from(["train", "test"])),
    min_size=1,
    max_size=8,
)

# Any text a project may hold (issue 56 row 14): control characters (C0 but NUL, DEL, C1 such as
# a Watson agent's), line and paragraph separators, brackets that look like Rasa markup.
_any_text = (
    st.lists(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
        | st.sampled_from(["[Berlin](city)", "]\\(", "]{", "\x85", "\u2028", "\x9b[2J", "\x7f"]),
        min_size=1,
        max_size=12,
    )
    .map(lambda parts: nfc("".join(parts)).strip())
    .filter(lambda t: not is_blank(t))
)
# Labelled rows (text -> (intents, split, context)) that CSV, JSONL and Rasa files must
# round-trip exactly.
ANY_ROWS = st.dictionaries(
    _any_text,
    st.tuples(
        st.sets(_name, min_size=1, max_size=2),
        st.sampled_from(["train", "test"]),
        st.one_of(st.just(""), _any_text),
    ),
    min_size=1,
    max_size=6,
)
