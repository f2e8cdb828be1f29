"""Typing filters intents: a few letters find an intent among hundreds, as in an editor's
command palette. A query matches a name when its characters appear in order; names where they
start the name or its words, close together, rank first.

Committing a typed query (:func:`best_match`) never guesses: it takes the one name that matches
the text better than every other, and refuses when nothing matches or the best are tied."""

from __future__ import annotations

import re
from collections.abc import Sequence

_SEPARATORS = re.compile(r"[\s_\-./:]+")
_SHOWN_TIED = 4


def clean_query(query: str) -> str:
    """The query as typed, without the ``/`` that opens the filter (from the keyboard, a name
    starting with a command letter is typed as ``/transfer``) and without outer spaces.

    Example:
        >>> clean_query("  /transfer n "), clean_query("//"), clean_query("get d")
        ('transfer n', '', 'get d')
    """
    return query.strip().lstrip("/").strip()


def _score(query: str, name: str) -> tuple[int, int, int] | None:
    """Lower is better; None when ``query`` does not match ``name``. The first two parts say how
    well it matches, the third (the name's length) only orders names that match equally well."""
    low = name.lower()
    compact = _SEPARATORS.sub("", query.lower())
    spaced = _SEPARATORS.sub("_", query.lower().strip())
    if not compact:
        return (0, 0, len(name))
    if _SEPARATORS.sub("_", low) == spaced:
        return (-1, 0, len(name))  # the whole name
    if low.startswith(spaced):
        return (0, 0, len(name))
    words = [w for w in _SEPARATORS.split(low) if w]
    if all(any(w.startswith(t) for w in words) for t in _SEPARATORS.split(spaced) if t):
        return (1, 0, len(name))
    if spaced in low:
        return (2, low.index(spaced), len(name))
    starts = {m.start() for m in re.finditer(r"(?:^|(?<=[\s_\-./:]))\w", low)}
    pos, gaps, word_hits = -1, 0, 0
    for ch in compact:
        nxt = low.find(ch, pos + 1)
        if nxt < 0:
            return None
        gaps += 0 if pos < 0 else nxt - pos - 1
        word_hits += nxt in starts
        pos = nxt
    return (3, gaps - 2 * word_hits, len(name))


def _ranked(query: str, names: Sequence[str]) -> list[tuple[tuple[int, int, int], str]]:
    query = clean_query(query)
    return sorted((score, name) for name in names if (score := _score(query, name)) is not None)


def match_intents(query: str, names: Sequence[str], limit: int = 8) -> list[str]:
    """The intents matching ``query``, best first (all names, in order, for an empty query).

    Example:
        >>> names = ["card_arrival", "card_linking", "cash_withdrawal_charge", "top_up_failed"]
        >>> match_intents("card", names)
        ['card_arrival', 'card_linking']
        >>> match_intents("carr", names)[0], match_intents("/top fail", names)
        ('card_arrival', ['top_up_failed'])
        >>> match_intents("cwc", names), match_intents("zzz", names)
        (['cash_withdrawal_charge'], [])
    """
    return [name for _, name in _ranked(query, names)][:limit]


def best_match(query: str, names: Sequence[str]) -> str:
    """The one intent ``query`` names: the match better than every other (a whole name beats a
    longer name it starts). Raises ``ValueError`` with a message for the annotator when the query
    is empty, matches nothing, or matches two or more names equally well (``card`` starts a dozen
    names; taking the shortest would be a guess).

    Example:
        >>> names = ["card_arrival", "card_linking", "transfer_timing",
        ...          "transfer_not_received_by_recipient", "top_up_limits"]
        >>> best_match("/transfer n", names), best_match("card arr", names)
        ('transfer_not_received_by_recipient', 'card_arrival')
        >>> best_match("card", names)
        Traceback (most recent call last):
        ...
        ValueError: 'card' matches card_arrival, card_linking equally well: type more of the name.
        >>> best_match("zzz", names)
        Traceback (most recent call last):
        ...
        ValueError: No intent matches 'zzz'.
    """
    text = clean_query(query)
    if not text:
        raise ValueError("Type part of an intent's name first.")
    ranked = _ranked(text, names)
    if not ranked:
        raise ValueError(f"No intent matches {text!r}.")
    top = ranked[0][0][:2]
    tied = [name for score, name in ranked if score[:2] == top]
    if len(tied) > 1:
        shown = ", ".join(tied[:_SHOWN_TIED]) + (", …" if len(tied) > _SHOWN_TIED else "")
        raise ValueError(f"{text!r} matches {shown} equally well: type more of the name.")
    return tied[0]
