"""The one factory of per-project Predictors: everything a Predictor is made of except its pool.

The live pool, a version's evaluation (test split or cross-validation), the out-of-scope
calibration, the Map, the confusion drill-down, the queue and the table all get their
:class:`~core.retrieval.predictor.Predictor` from a :class:`PredictorFactory`, so they decide an
intent by the same rule: the reserved :data:`~core.retrieval.scope.OUT_OF_SCOPE` label never
joins a pool (:func:`~core.retrieval.scope.in_scope_labels`), a project that encodes context sees
each text after the turn before it (:meth:`PredictorFactory.text_of`), the intents' names and
descriptions join as anchors, and the rule, ``k``, the multi-label head and the thresholds are
the version's. A fold-wise pool (cross-validation, calibration) is the same factory's
:meth:`~PredictorFactory.build` over the other folds' rows; a labelled pool row is scored without
itself through ``exclude_ids`` (leave-one-out, :meth:`Predictor.rank`).

Example:
    >>> import numpy as np
    >>> factory = PredictorFactory.for_vectors(2)
    >>> p = factory.build(["hi", "bye", "?"], [("greet",), ("bye",), ("out_of_scope",)],
    ...                   vectors=np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]]))
    >>> len(p.index), sorted(p.index.intents)
    (2, ['bye', 'greet'])
    >>> p.rank(np.array([[0.9, 0.1]]))[0].top
    'greet'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np

from core.encoding.anchor_encoder import anchor_encoder_of
from core.encoding.previous_turn import with_context
from core.retrieval.knn import DEFAULT_RULE, check_rule
from core.retrieval.predictor import Predictor, TextEncoder
from core.retrieval.scope import in_scope_labels

if TYPE_CHECKING:
    from core.multilabel.head import MultiLabelHead

P = TypeVar("P", bound=Predictor)


class VectorsOnly:
    """The encoder of a pool whose vectors are given (benchmarks, doctests, design aids on a
    cached space): it names the space's dimension and refuses to encode."""

    name = "vectors"

    def __init__(self, dim: int) -> None:
        self._dim = int(dim)

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise ValueError("This predictor was built from vectors: pass vectors, not texts.")


@dataclass(frozen=True)
class Anchors:
    """The intents' anchors (intent -> its description or humanised name) and their weight in
    examples (0: off); ``vectors``: one row per text, in order, by the anchor encoder (None:
    encoded when a predictor is built)."""

    texts: Mapping[str, str]
    weight: float
    vectors: np.ndarray | None = None

    @property
    def on(self) -> bool:
        return bool(self.weight) and bool(self.texts)


@dataclass(frozen=True)
class PredictorFactory:
    """How a project's Predictors are made (see the module doc).

    Args:
        encoder: the version's encoder (the pool's and the queries' space).
        k: examples per intent behind its score.
        rule: the decision rule (:data:`core.retrieval.knn.RULES`).
        anchors: the intents' names / descriptions in the pool (None: none).
        head: the version's multi-label head (it decides the label set).
        multi_label: whether the project is multi-label (None: from the pool's labels).
        thresholds: intent (or ``"default"``) -> minimum score (out of scope below).
        use_context: the project encodes each text after the turn before it.
    """

    encoder: TextEncoder
    k: int = 1
    rule: str = DEFAULT_RULE
    anchors: Anchors | None = None
    head: MultiLabelHead | None = None
    multi_label: bool | None = None
    thresholds: Mapping[str, float] = field(default_factory=dict)
    use_context: bool = False

    def __post_init__(self) -> None:
        check_rule(self.rule)
        if self.k < 1:
            raise ValueError("k must be at least 1")

    @classmethod
    def for_vectors(cls, dim: int, **options: Any) -> PredictorFactory:
        """A factory of pools built from given vectors (``options``: the other fields)."""
        return cls(VectorsOnly(dim), **options)

    def replace(self, **changes: Any) -> PredictorFactory:
        """This factory with some fields changed (e.g. ``thresholds`` once calibrated)."""
        return dataclasses.replace(self, **changes)

    @property
    def dim(self) -> int:
        return int(self.encoder.dim)

    def text_of(self, text: str, context: str = "") -> str:
        """What the encoder sees of a text: after its context when the project encodes context."""
        return with_context(text, context) if self.use_context and context else text

    def prepared(self) -> PredictorFactory:
        """This factory with its anchors encoded (once, for the many fold-wise pools)."""
        a = self.anchors
        if a is None or not a.on or a.vectors is not None:
            return self
        by = anchor_encoder_of(self.encoder)  # an old version's separate one, if any
        vectors = np.asarray(by.encode(list(a.texts.values())), dtype=np.float32)
        return self.replace(anchors=Anchors(a.texts, a.weight, vectors))

    @overload
    def empty(self) -> Predictor: ...
    @overload
    def empty(self, kind: type[P]) -> P: ...
    def empty(self, kind: type[Predictor] = Predictor) -> Predictor:
        """A Predictor (of class ``kind``) with this factory's settings and anchors and no
        example yet (the live pool adds and removes its examples as the labels change)."""
        predictor = kind(
            self.encoder,
            k=self.k,
            head=self.head,
            multi_label=self.multi_label,
            thresholds=self.thresholds,
            rule=self.rule,
        )
        a = self.anchors
        if a is not None and a.on:
            predictor.set_anchors(a.texts, a.weight, vectors=a.vectors)
        return predictor

    @overload
    def build(
        self,
        texts: Sequence[str],
        labels: Sequence[str] | Sequence[Sequence[str]],
        *,
        vectors: np.ndarray | None = ...,
        ids: Sequence[int] | None = ...,
    ) -> Predictor: ...
    @overload
    def build(
        self,
        texts: Sequence[str],
        labels: Sequence[str] | Sequence[Sequence[str]],
        *,
        vectors: np.ndarray | None = ...,
        ids: Sequence[int] | None = ...,
        kind: type[P],
    ) -> P: ...
    def build(
        self,
        texts: Sequence[str],
        labels: Sequence[str] | Sequence[Sequence[str]],
        *,
        vectors: np.ndarray | None = None,
        ids: Sequence[int] | None = None,
        kind: type[Predictor] = Predictor,
    ) -> Predictor:
        """A Predictor (of class ``kind``) over labelled examples, each labelled by an intent or
        a label set (``texts`` as the encoder sees them, encoded now unless ``vectors`` are
        given; ``ids``: their pool ids, default ``0..n-1``). The reserved out-of-scope label is
        dropped and a row left with no intent stays out of the pool."""
        if len(texts) != len(labels) or (vectors is not None and len(vectors) != len(texts)):
            raise ValueError("texts, labels and vectors differ in length.")
        predictor = self.empty(kind)
        sets = [in_scope_labels((lab,) if isinstance(lab, str) else lab) for lab in labels]
        keep = [i for i, s in enumerate(sets) if s]
        if keep:
            kept = [texts[i] for i in keep]
            vecs = (
                np.asarray(self.encoder.encode(kept))
                if vectors is None
                else np.asarray(vectors)[keep]
            )
            pool_ids = list(ids) if ids is not None else list(range(len(texts)))
            predictor.index.add([pool_ids[i] for i in keep], vecs, kept, [sets[i] for i in keep])
        return predictor


def vector_pool(
    vectors: np.ndarray, labels: Sequence[str] | Sequence[Sequence[str]], **options: Any
) -> Predictor:
    """A Predictor over given vectors and their labels (``options``: the factory's fields, e.g.
    ``k``), for benchmarks and design aids that hold vectors, not texts.

    Example:
        >>> vector_pool(np.eye(2), ["a", "b"]).rank(np.array([[0.2, 0.9]]))[0].top
        'b'
    """
    vecs = np.asarray(vectors, dtype=np.float32)
    factory = PredictorFactory.for_vectors(vecs.shape[1] if vecs.ndim == 2 else 1, **options)
    return factory.build([""] * len(labels), labels, vectors=vecs)
