"""Rows every format test writes and reads: multi-label, test split, odd names, unlabelled."""

from __future__ import annotations

from app.formats import Row

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


def _key(rows):
    return sorted(rows, key=lambda r: (r.text, r.labels, r.split))


def key(rows):
    """Rows in a fixed order, to compare what was written with what was read."""
    return sorted(rows, key=lambda r: (r.text, r.labels, r.split))
