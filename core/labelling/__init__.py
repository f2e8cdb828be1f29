"""What the labelling queue needs beside the predictor: the orders it offers (most uncertain,
uncertain and spread out, least like anything labelled, near an intent) and a fuzzy filter over intent names."""

from __future__ import annotations

from core.labelling.fuzzy import best_match, clean_query, match_intents
from core.labelling.order import (
    farthest_first,
    most_similar_first,
    smallest_margin_first,
    uncertain_spread_out,
)

__all__ = [
    "best_match",
    "clean_query",
    "farthest_first",
    "match_intents",
    "most_similar_first",
    "smallest_margin_first",
    "uncertain_spread_out",
]
