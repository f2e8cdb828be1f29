"""The reserved *out of scope* label: examples that belong to no intent. It is never a class (no
cluster is trained for it, it needs no minimum count); such examples calibrate the out-of-scope
thresholds (:mod:`core.evaluation.oos`), and :class:`core.retrieval.factory.PredictorFactory`
leaves them out of every pool. A leaf module, so every layer can use the rule.
"""

from __future__ import annotations

from collections.abc import Iterable

# The reserved label of examples that belong to no intent.
OUT_OF_SCOPE = "out_of_scope"


def in_scope_labels(labels: Iterable[str]) -> tuple[str, ...]:
    """A label set without the reserved :data:`OUT_OF_SCOPE` label (empty: an out-of-scope or
    unlabelled example).

    Example:
        >>> in_scope_labels(["out_of_scope"]), in_scope_labels(["refund"])
        ((), ('refund',))
    """
    return tuple(name for name in labels if name != OUT_OF_SCOPE)
