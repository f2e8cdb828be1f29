"""Which encoder embeds an encoder's anchors (the intents' names and descriptions).

An encoder embeds its own anchors, with one exception kept for old versions: a version trained
with a separate label encoder (an option that has left ``TrainConfig``) embeds its anchors with
that label encoder. The one reader of such versions, :func:`core.training.model_io.load_trained`
(through :func:`core.training.model_io.load_label_encoder`, which the version's int8 copy asks
too), sets the encoder's ``anchors`` to it; nothing else carries it. Whatever embeds anchors asks
:func:`anchor_encoder_of`, so the embedding cache keeps those vectors under the label encoder's
own fingerprint, never mixed with the utterance encoder's.

Example:
    >>> class Toy:
    ...     name = "toy"
    >>> utterances, labels = Toy(), Toy()
    >>> anchor_encoder_of(utterances) is utterances
    True
    >>> utterances.anchors = labels
    >>> anchor_encoder_of(utterances) is labels
    True
"""

from __future__ import annotations

from typing import TypeVar

E = TypeVar("E")


def anchor_encoder_of(encoder: E) -> E:
    """The encoder of ``encoder``'s anchors: its ``anchors`` when it has a separate one, else
    ``encoder`` itself (any encoder that encodes texts, as the callers' protocols ask)."""
    anchors = getattr(encoder, "anchors", None)
    return encoder if anchors is None else anchors
