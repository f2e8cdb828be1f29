"""Orders for the labelling queue, over the candidates' vectors and predictions.

* most uncertain first: the smallest margin between the two best intents (margin sampling, the
  classic active-learning rule: the label that most changes the decision boundary);
* least like anything labelled first: farthest-first traversal, so each next utterance is the one
  least similar to the labelled pool *and* to what the queue already put before it (a run of
  near-duplicates does not fill the queue);
* uncertain and spread out: the smallest margins, spread out — a shortlist of the
  ``shortlist × limit`` smallest margins, ordered farthest-first (uncertainty plus diversity, as
  in diverse mini-batch active learning: a chunk is not spent on near-twins of one confusion);
* near an intent: the candidates most similar to that intent's examples first.
"""

from __future__ import annotations

import numpy as np

from core.retrieval.knn import normalise


def smallest_margin_first(margins: np.ndarray) -> list[int]:
    """Candidate positions, smallest margin first (ties: file order).

    Example:
        >>> smallest_margin_first(np.array([0.3, 0.01, 0.2, 0.01]))
        [1, 3, 2, 0]
    """
    return [int(i) for i in np.argsort(np.asarray(margins), kind="stable")]


def most_similar_first(similarity: np.ndarray) -> list[int]:
    """Candidate positions, most similar first (ties: file order).

    Example:
        >>> most_similar_first(np.array([0.1, 0.9, 0.5]))
        [1, 2, 0]
    """
    return [int(i) for i in np.argsort(-np.asarray(similarity), kind="stable")]


def farthest_first(candidates: np.ndarray, pool_similarity: np.ndarray, limit: int) -> list[int]:
    """Up to ``limit`` candidate positions, each the least similar to the labelled pool and to
    the candidates picked before it.

    Args:
        candidates: ``(n, dim)`` vectors of the utterances to order.
        pool_similarity: ``(n,)`` each candidate's similarity to its nearest labelled example
            (``-1`` when nothing is labelled yet).
        limit: how many to order (the rest are not needed yet).

    Example:
        >>> c = np.array([[1, 0], [0.99, 0.14], [0, 1]], dtype=np.float32)
        >>> farthest_first(c, np.array([0.2, 0.1, 0.3]), 3)  # 1 first; 0 is 1's near-twin: last
        [1, 2, 0]
    """
    vecs = normalise(candidates)
    covered = np.asarray(pool_similarity, dtype=np.float32).copy()
    order: list[int] = []
    for _ in range(min(limit, len(vecs))):
        pick = int(np.argmin(covered))
        order.append(pick)
        covered = np.maximum(covered, vecs @ vecs[pick])
        covered[order] = np.inf
    return order


def uncertain_spread_out(
    candidates: np.ndarray,
    margins: np.ndarray,
    pool_similarity: np.ndarray,
    limit: int,
    shortlist: int = 2,
) -> list[int]:
    """Up to ``limit`` candidate positions: the ``shortlist * limit`` smallest margins, taken
    farthest-first (each the least like the labelled pool and the picks before it).

    Args:
        candidates: ``(n, dim)`` vectors of the utterances to order.
        margins: ``(n,)`` top score minus the runner-up's for each candidate.
        pool_similarity: ``(n,)`` each candidate's similarity to its nearest labelled example.
        limit: how many to order.
        shortlist: how many times ``limit`` of the most uncertain to spread the picks over.

    Example:
        >>> c = np.array([[1, 0], [0.99, 0.14], [0, 1], [0.7, 0.7]], dtype=np.float32)
        >>> # 0 and 1 are near-twins with the smallest margins: only one of them comes first
        >>> uncertain_spread_out(c, np.array([0.01, 0.02, 0.03, 0.5]), np.zeros(4), 2, 1)
        [0, 1]
        >>> uncertain_spread_out(c, np.array([0.01, 0.02, 0.03, 0.5]), np.zeros(4), 2, 2)
        [0, 2]
    """
    if shortlist < 1:
        raise ValueError("shortlist must be at least 1")
    short = smallest_margin_first(margins)[: limit * shortlist]
    if not short:
        return []
    picks = farthest_first(candidates[short], np.asarray(pool_similarity)[short], limit)
    return [short[i] for i in picks]
