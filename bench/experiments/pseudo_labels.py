"""Self-training (an experiment that left the product, issue 26): pseudo-labels for unlabelled
utterances, for a second training pass. It tied on CLINC150 over 3 seeds for about 6x the training
time (``bench/RESULTS.md``); ``bench/selftrain.py`` and ``bench/train.py`` still run it.

After a first pass on the labelled pool, each unlabelled utterance is given the intent the pool's
:class:`~core.retrieval.predictor.Predictor` scores highest (the live rule), and per intent
only the ``per_intent`` utterances with the largest margin over the runner-up intent are kept — class-balanced, so a frequent intent
cannot drown the rest, and confident, so few pseudo-labels are wrong (97 % right on BANKING77).
The second pass trains on labels plus pseudo-labels; the pseudo-labels never join the pool, so
every prediction is still explained by examples a person labelled. ``bench/selftrain.py``
measures what it buys (BANKING77 10-shot: +1.2 points for about 6× the training time).

Example:
    >>> import numpy as np
    >>> from core.retrieval.factory import vector_pool
    >>> pool = vector_pool(np.array([[1.0, 0.0], [0.0, 1.0]]), ["a", "b"])
    >>> unlabelled = np.array([[0.9, 0.1], [0.6, 0.5], [0.1, 0.9], [0.2, 0.8]])
    >>> pseudo_labels(pool, unlabelled, per_intent=1)
    [(0, 'a'), (2, 'b')]
"""

from __future__ import annotations

import numpy as np

from core.retrieval.predictor import Predictor


def pseudo_labels(
    pool: Predictor, unlabelled: np.ndarray, per_intent: int
) -> list[tuple[int, str]]:
    """``(position in unlabelled, intent)`` pairs: per intent, the ``per_intent`` unlabelled
    utterances the pool gives that intent with the largest margin (ties: input order).

    Args:
        pool: the Predictor over the labelled examples (single-label), in the vectors' space.
        unlabelled: ``(m, dim)`` vectors of the utterances to pseudo-label.
        per_intent: how many to keep per intent (``0`` keeps none).
    """
    if per_intent < 0:
        raise ValueError("per_intent must be 0 or more.")
    if per_intent == 0 or len(unlabelled) == 0 or len(pool.index.intents) < 2:
        return []
    intents, best = pool.score_matrix(np.asarray(unlabelled, dtype=np.float32))
    top = best.argmax(axis=1)
    ranked = np.sort(best, axis=1)
    margin = ranked[:, -1] - ranked[:, -2]
    chosen: list[tuple[int, str]] = []
    for i, name in enumerate(intents):
        mine = np.flatnonzero(top == i)
        keep = mine[np.argsort(-margin[mine], kind="stable")][:per_intent]
        chosen += [(int(j), name) for j in sorted(keep)]
    return chosen
