"""Typing filters intents: a few letters find an intent among hundreds, as in an editor's
command palette. A query matches a name when its characters appear in order; names where they
start the name or its words, close together, rank first."""

from __future__ import annotations

import re

_SEPARATORS = re.compile(r"[\s_\-./:]+")


def _score(query: str, name: str) -> tuple[int, int, int] | None:
    """Lower is better; None when ``query`` does not match ``name``."""
    low = name.lower()
    compact = _SEPARATORS.sub("", query.lower())
    spaced = _SEPARATORS.sub("_", query.lower().strip())
    if not compact:
        return (0, 0, len(name))
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


def match_intents(query: str, names: list[str], limit: int = 8) -> list[str]:
    """The intents matching ``query``, best first (all names, in order, for an empty query).

    Example:
        >>> names = ["card_arrival", "card_linking", "cash_withdrawal_charge", "top_up_failed"]
        >>> match_intents("card", names)
        ['card_arrival', 'card_linking']
        >>> match_intents("carr", names)[0], match_intents("top fail", names)
        ('card_arrival', ['top_up_failed'])
        >>> match_intents("cwc", names), match_intents("zzz", names)
        (['cash_withdrawal_charge'], [])
    """
    scored = [(score, name) for name in names if (score := _score(query, name)) is not None]
    return [name for _, name in sorted(scored)][:limit]
