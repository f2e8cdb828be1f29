"""The previous turn as part of what is encoded (ConveRT's multi-context idea, its simplest form).

An utterance may carry the turn before it, its *context* (usually the bot's question: "Do you want
to cancel your card?" before "yes please"). A project that encodes context gives the encoder one
text, ``"{context} [SEP] {utterance}"``, for the labelled pool, the training pairs and every query
alike, so the three always agree; an utterance without context is encoded as itself. ``[SEP]`` is
the separator token of MiniLM's (BERT) vocabulary; for other encoders it is a plain marker, the
same on both sides of every comparison. One text instead of a weighted mean of two vectors: the
same string goes through training, the embedding cache and ONNX unchanged.

Example:
    >>> with_context("yes please", "Do you want to cancel your card?")
    'Do you want to cancel your card? [SEP] yes please'
    >>> with_context("I lost my card", "")
    'I lost my card'
"""

from __future__ import annotations

SEPARATOR = " [SEP] "


def with_context(text: str, context: str | None) -> str:
    """The text the encoder sees for ``text`` after ``context`` (``text`` itself without one)."""
    ctx = (context or "").strip()
    return f"{ctx}{SEPARATOR}{text}" if ctx else text
