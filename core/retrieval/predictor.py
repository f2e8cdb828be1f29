"""The one object that predicts: encoder + labelled pool + (optional) multi-label head + thresholds.

The live app holds one per project (its pool follows the database, example by example), an
exported bundle loads into one (:func:`core.bundle.load`), and both answer with the same
:func:`prediction_to_dict` — so a prediction means the same thing everywhere.

Decision rule: the pool ranks the intents by :meth:`~core.retrieval.knn.KnnIndex.classify` (by
default each intent's nearest example and its prototype, :data:`~core.retrieval.knn.DEFAULT_RULE`)
and explains them (every ranked intent keeps the examples and the prototype score behind it). A single-label prediction names the top intent when its score
reaches its threshold (none by default). When the model has a multi-label head, the head decides
the label set from its probabilities and per-intent thresholds; a multi-label project without a
head takes every intent whose score reaches its threshold (the live pool until the head fitted on
its frozen vectors lands, and bundles written before those heads, calibrate it out of fold,
:mod:`core.retrieval.knn_threshold`; 0.5 when none is given). The k-NN evidence is shown
either way.

Example:
    >>> import numpy as np
    >>> class Toy:
    ...     name, dim = "toy", 2
    ...     def encode(self, texts):
    ...         return np.array([[1.0, 0.0] if "hi" in t else [0.0, 1.0] for t in texts])
    >>> p = Predictor.from_examples(Toy(), ["hi there", "bye now"], [("greet",), ("bye",)])
    >>> p.predict(["oh hi"])[0]["labels"]
    ['greet']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from core.encoding.anchor_encoder import anchor_encoder_of
from core.portable import DEPTH, MULTI_LABEL_KNN_THRESHOLD, decide, decision_threshold
from core.retrieval.knn import DEFAULT_RULE, IntentScore, KnnIndex, Prediction, check_rule
from core.retrieval.rule import Tops

if TYPE_CHECKING:
    from core.multilabel.head import MultiLabelHead

__all__ = [
    "DEPTH",
    "MULTI_LABEL_KNN_THRESHOLD",
    "Predictor",
    "TextEncoder",
    "decision_threshold",
    "prediction_to_dict",
]


class TextEncoder(Protocol):
    """What the predictor needs of an encoder (:class:`core.encoding.registry.Encoder` or ONNX)."""

    name: str

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def prediction_to_dict(
    text: str,
    pred: Prediction,
    *,
    multi_label: bool = False,
    thresholds: Mapping[str, float] | None = None,
    top_n: int = 5,
) -> dict[str, Any]:
    """The public JSON shape of one k-NN prediction (the app's API and bundles return it).

    ``labels`` is the decision: the top intent (single-label) or every intent whose score reaches
    its threshold (multi-label); a threshold comes from ``thresholds[intent]`` or
    ``thresholds["default"]``. With no threshold a single-label prediction always names its top.
    ``oos`` is true when the decision is *no intent* although the pool ranked some (out of scope;
    single-label: ``threshold`` is the one its top intent missed or reached; a top intent with no
    examples yet, scored by its anchor, is taken: thresholds are calibrated on example scores,
    not on anchors'); ``ambiguous`` when
    the top two intents are within :data:`~core.retrieval.knn.AMBIGUOUS_MARGIN`.

    Example:
        >>> from core.retrieval.knn import IntentScore, Neighbour
        >>> best = Neighbour(0, "hi", ("greet",), 0.9)
        >>> prediction_to_dict("hello", Prediction([IntentScore("greet", 0.9, best)], [best]))["top"]
        'greet'
    """
    labels, decided_by = decide(
        [(s.intent, s.score) for s in pred.intents],
        cold=bool(pred.intents) and pred.intents[0].cold,
        thresholds=thresholds,
        multi_label=multi_label,
    )
    row: dict[str, Any] = {
        "text": text,
        "top": pred.top,
        "score": pred.score,
        "margin": pred.margin,
        "labels": labels,
        "oos": pred.top is not None and not labels,
        "ambiguous": pred.ambiguous(),
    }
    if decided_by is not None:
        row["threshold"] = decided_by
    return {
        **row,
        "intents": [_intent_dict(s) for s in pred.intents[:top_n]],
        "neighbours": [n.to_dict() for n in pred.neighbours],
    }


def _intent_dict(score: IntentScore) -> dict[str, Any]:
    """One ranked intent: ``intent``, ``score``, ``best`` (its nearest example; for an intent
    without examples its anchor, id -1) and, when its prototype took part, ``nearest`` and
    ``prototype`` (the two parts of the score); ``anchor``: the cosine to its anchor (its
    description or name) when anchors take part."""
    row: dict[str, Any] = {
        "intent": score.intent,
        "score": score.score,
        "best": score.best.to_dict(),
    }
    if score.prototype is not None:
        row["nearest"] = score.nearest
        row["prototype"] = score.prototype
    if score.anchor is not None:
        row["anchor"] = score.anchor
    return row


class Predictor:
    """Predict intents from a labelled pool in an encoder's space, explained by real examples.

    Args:
        encoder: turns texts into vectors (the model version's encoder).
        index: the labelled pool; add or remove examples at any time (they count at once).
        k: examples per intent behind its score (1 = ConvFiT's nearest neighbour).
        head: a fitted multi-label head; when present it decides the label set.
        multi_label: whether the project is multi-label (None: decided by the pool's labels with
            :func:`core.multilabel.is_multilabel`, at each call).
        thresholds: intent (or ``"default"``) -> minimum score for the decision.
        rule: the decision rule (:data:`~core.retrieval.knn.RULES`; nearest example + prototype
            by default).

    The anchors (intent descriptions / names) are embedded by ``encoder``'s anchor encoder
    (:func:`core.encoding.anchor_encoder.anchor_encoder_of`: itself, or an old version's
    separate label encoder).
    """

    def __init__(
        self,
        encoder: TextEncoder,
        index: KnnIndex | None = None,
        *,
        k: int = 1,
        head: MultiLabelHead | None = None,
        multi_label: bool | None = None,
        thresholds: Mapping[str, float] | None = None,
        rule: str = DEFAULT_RULE,
    ) -> None:
        if k < 1:
            raise ValueError("k must be at least 1")
        self.rule = check_rule(rule)
        self.encoder = encoder
        self.index = index if index is not None else KnnIndex(encoder.dim)
        if self.index.dim != encoder.dim:
            raise ValueError(f"the pool has dim {self.index.dim}, the encoder {encoder.dim}")
        self.k = k
        self.head = head
        self._multi_label = multi_label
        self.thresholds: dict[str, float] = dict(thresholds or {})

    @classmethod
    def from_examples(
        cls,
        encoder: TextEncoder,
        texts: Sequence[str],
        labels: Sequence[Sequence[str]],
        *,
        vectors: np.ndarray | None = None,
        ids: Sequence[int] | None = None,
        **options: Any,
    ) -> Predictor:
        """A predictor over labelled examples (encoded now unless ``vectors`` are given)."""
        predictor = cls(encoder, **options)
        if len(texts):
            vecs = encoder.encode(list(texts)) if vectors is None else vectors
            predictor.index.add(list(ids or range(len(texts))), vecs, texts, labels)
        return predictor

    def set_anchors(
        self,
        texts: Mapping[str, str],
        weight: float,
        *,
        vectors: np.ndarray | None = None,
    ) -> None:
        """Intent -> anchor text (:func:`core.retrieval.anchors.anchor_texts`) joins the pool
        with ``weight`` (0: off; see :meth:`~core.retrieval.knn.KnnIndex.set_anchors`); encoded
        now unless ``vectors`` (one row per intent, in ``texts``' order) are given."""
        names = list(texts)
        if vectors is None:
            vectors = (
                anchor_encoder_of(self.encoder).encode([texts[n] for n in names])
                if names and weight
                else np.zeros((0, self.index.dim), dtype=np.float32)
            )
            if not weight:
                names = []
        self.index.set_anchors(names, vectors, [texts[n] for n in names], weight)

    @property
    def multi_label(self) -> bool:
        if self._multi_label is not None:
            return self._multi_label
        from core.multilabel.rule import is_multilabel_count

        return is_multilabel_count(*self.index.label_counts())

    def fold(self, ids: Sequence[int]) -> Predictor:
        """This Predictor (encoder, anchors, ``k``, rule) over only the pool examples ``ids``: a
        fold-wise pool for out-of-fold scoring (no head, no thresholds: it ranks)."""
        keep = set(ids)
        every, texts, sets, vectors = self.index.examples()
        rows = [i for i, item in enumerate(every) if item in keep]
        sub = Predictor(
            self.encoder,
            self.index.empty_like(),
            k=self.k,
            rule=self.rule,
        )
        if rows:
            sub.index.add(
                [every[i] for i in rows],
                vectors[rows],
                [texts[i] for i in rows],
                [sets[i] for i in rows],
            )
        return sub

    def rank(
        self,
        vectors: np.ndarray,
        *,
        exclude_ids: Sequence[int | None] | None = None,
        k: int | None = None,
        show: int = 5,
        depth: int = DEPTH,
    ) -> list[Prediction]:
        """The pool's ranking of the intents for each query vector, by this predictor's ``k``
        and rule: the one call behind every decision and every number about one. ``exclude_ids``:
        per query, a pool id to leave out (a labelled example scored without itself, out of its
        intent's prototype too: leave-one-out); ``depth``: neighbours looked at (an ordering
        heuristic may look at fewer)."""
        return self.index.classify(
            np.asarray(vectors),
            k=k or self.k,
            show=show,
            depth=depth,
            exclude_ids=exclude_ids,
            rule=self.rule,
        )

    def tops(
        self,
        vectors: np.ndarray,
        *,
        exclude_ids: Sequence[int | None] | None = None,
        show: int = 0,
    ) -> Tops:
        """What :meth:`rank` puts first for each query (the top intent, its score, the margin),
        equal to it, without its evidence (:func:`core.retrieval.rule.tops`): for many queries
        at once (an evaluation, a parity check, a map)."""
        return self.index.tops(
            np.asarray(vectors),
            k=self.k,
            show=show,
            depth=DEPTH,
            exclude_ids=exclude_ids,
            rule=self.rule,
        )

    def no_intent(self, vectors: np.ndarray) -> list[bool]:
        """Whether each question's decision is no intent although the pool ranked some (the
        ``oos`` of :meth:`predict_vectors`: a top intent with examples below its threshold),
        from :meth:`tops`, for a single-label predictor without a head."""
        if self.head is not None or self.multi_label:
            raise ValueError("no_intent decides single-label questions without a head.")
        found, warm = self.tops(vectors), self.index.intents
        return [
            top is not None and top in warm and score < decision_threshold(self.thresholds, top)
            for top, score in zip(found.intents, found.scores.tolist(), strict=True)
        ]

    def score_matrix(self, vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
        """Every intent's score for every query vector by this predictor's ``k`` and rule
        (:meth:`~core.retrieval.knn.KnnIndex.score_matrix`): a whole held-out fold at once."""
        return self.index.score_matrix(np.asarray(vectors), k=self.k, rule=self.rule)

    def predict_vectors(
        self,
        texts: Sequence[str],
        vectors: np.ndarray,
        *,
        exclude_ids: Sequence[int | None] | None = None,
        k: int | None = None,
        show: int = 5,
        top_n: int = 5,
    ) -> list[tuple[dict[str, Any], Prediction]]:
        """:meth:`predict_with_evidence` of texts already encoded (``vectors``, one row each, by
        this predictor's encoder). ``exclude_ids`` leaves each query's own pool row out of the
        k-NN evidence (see :meth:`rank`); a multi-label head, fitted on every row, still decides
        from the vector."""
        if len(texts) != len(vectors):
            raise ValueError("texts and vectors differ in length.")
        if not len(texts):
            return []
        preds = self.rank(vectors, exclude_ids=exclude_ids, k=k, show=show)
        multi = self.multi_label
        rows = [
            prediction_to_dict(
                text, pred, multi_label=multi, thresholds=self.thresholds, top_n=top_n
            )
            for text, pred in zip(texts, preds, strict=True)
        ]
        head = self.head  # read once: the live pool may swap its head meanwhile
        if head is not None:
            _apply_head(head, rows, np.asarray(vectors))
        return list(zip(rows, preds, strict=True))

    def predict_with_evidence(
        self, texts: str | Sequence[str], *, k: int | None = None, show: int = 5, top_n: int = 5
    ) -> list[tuple[dict[str, Any], Prediction]]:
        """Each text's public dict (see :meth:`predict`) with the k-NN prediction behind it."""
        batch = [texts] if isinstance(texts, str) else list(texts)
        if not batch:
            return []
        return self.predict_vectors(batch, self.encoder.encode(batch), k=k, show=show, top_n=top_n)

    def predict(
        self, texts: str | Sequence[str], *, k: int | None = None, show: int = 5, top_n: int = 5
    ) -> list[dict[str, Any]]:
        """Predict intents for ``texts`` (a string or a list), one dict per text.

        Each dict: ``text``, ``top``, ``score``, ``margin``, ``labels`` (the decision),
        ``intents`` (ranked, each with the ``best`` example behind its score) and ``neighbours``
        (the ``show`` nearest examples: ``id``, ``text``, ``labels``, ``similarity``). With a
        multi-label head also ``probabilities`` (intent -> p) and ``threshold``.
        """
        return [row for row, _ in self.predict_with_evidence(texts, k=k, show=show, top_n=top_n)]


def _apply_head(head: MultiLabelHead, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
    """The head decides the label set; the k-NN evidence stays."""
    from core.multilabel.thresholds import decide

    proba = head.predict_proba(vectors)
    decided = decide(proba, head.intents, head.thresholds)
    for row, p, labels in zip(rows, proba, decided, strict=True):
        row["labels"] = list(labels)
        # not rounded: a rounded probability could read as >= the threshold it missed
        row["probabilities"] = {name: float(v) for name, v in zip(head.intents, p, strict=True)}
        row["threshold"] = head.thresholds.global_threshold
        row["oos"] = bool(row["intents"]) and not row["labels"]
