"""Evaluation figures: per-intent F1 bars, the confusion heatmap, the worst confused pairs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from app.plots.common import intent_colours, plain


def f1_bars(
    per_intent: Mapping[str, float],
    *,
    title: str | None = None,
    colours: Mapping[str, str] | None = None,
) -> go.Figure:
    """Horizontal per-intent F1 bars, worst intent on top, in each intent's colour.

    Example:
        >>> list(f1_bars({"a": 0.9, "b": 0.4}).data[0].y)
        ['b', 'a']
    """
    items = sorted(per_intent.items(), key=lambda kv: (float(kv[1]), kv[0]))
    names = [k for k, _ in items]
    values = [float(v) for _, v in items]
    palette = {**intent_colours(names), **(colours or {})}
    fig = go.Figure(
        go.Bar(
            x=values,
            y=[plain(k) for k in names],
            orientation="h",
            marker={"color": [palette[k] for k in names]},
            customdata=names,
            text=[f"{v:.2f}" for v in values],
            textposition="outside",
            hovertemplate="%{y}: F1 %{x:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        xaxis={"range": [0, 1.08], "title": {"text": "F1"}},
        yaxis={"autorange": "reversed", "automargin": True},
        height=max(300, 60 + 18 * len(names)),
        margin={"l": 10, "r": 10, "t": 50 if title else 20, "b": 40},
        template="plotly_white",
        showlegend=False,
    )
    return fig


def _square(labels: Sequence[str], matrix: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    z = np.asarray(matrix, dtype=np.float64)
    n = len(labels)
    if z.shape != (n, n):
        raise ValueError(f"matrix must be {n}x{n} (gold rows, predicted columns), got {z.shape}")
    return z


def confusion_heatmap(
    labels: Sequence[str],
    matrix: np.ndarray | Sequence[Sequence[float]],
    *,
    title: str | None = None,
) -> go.Figure:
    """Confusion-matrix heatmap: gold intents as rows, predicted as columns.

    Each cell's ``customdata`` is ``[gold, predicted]`` so a click tells which utterances to show.

    Example:
        >>> fig = confusion_heatmap(["a", "b"], [[3, 1], [0, 4]])
        >>> list(fig.data[0].customdata[0][1])
        ['a', 'b']
    """
    z = _square(labels, matrix)
    names = [str(x) for x in labels]
    custom = [[[g, p] for p in names] for g in names]  # read back by a click: as stored
    shown = [plain(x) for x in names]
    integer = bool(np.all(np.equal(np.mod(z, 1), 0)))
    fig = go.Figure(
        go.Heatmap(
            z=z.tolist(),
            x=shown,
            y=shown,
            customdata=custom,
            colorscale="Blues",
            hovertemplate=(
                "gold: %{y}<br>predicted: %{x}<br>"
                + ("count: %{z:d}" if integer else "value: %{z:.3f}")
                + "<extra></extra>"
            ),
            hoverongaps=False,
        )
    )
    size = max(400, min(1400, 120 + 14 * len(names)))
    fig.update_layout(
        title=title,
        xaxis={"title": {"text": "predicted"}, "tickangle": -60, "automargin": True},
        yaxis={"title": {"text": "gold"}, "autorange": "reversed", "automargin": True},
        width=None,
        height=size,
        margin={"l": 10, "r": 10, "t": 50 if title else 20, "b": 10},
        template="plotly_white",
    )
    return fig


def worst_pairs(
    labels: Sequence[str], matrix: np.ndarray | Sequence[Sequence[float]], top: int = 10
) -> list[tuple[str, str, int]]:
    """The most frequent confusions ``(gold, predicted, count)``, off-diagonal and non-zero.

    Example:
        >>> worst_pairs(["a", "b", "c"], [[5, 2, 0], [3, 4, 0], [0, 1, 6]], top=2)
        [('b', 'a', 3), ('a', 'b', 2)]
    """
    z = _square(labels, matrix)
    cells = [
        (str(labels[i]), str(labels[j]), round(float(z[i, j])))
        for i in range(len(labels))
        for j in range(len(labels))
        if i != j and z[i, j] > 0
    ]
    cells.sort(key=lambda c: (-c[2], c[0], c[1]))
    return cells[: max(0, top)]


def most_confused(
    labels: Sequence[str], matrix: np.ndarray | Sequence[Sequence[float]], n: int
) -> tuple[list[str], np.ndarray]:
    """The ``n`` intents with the most errors (wrong as gold plus wrong as predicted) and their
    sub-matrix, in the original order: a heatmap of 300 intents has cells too small to read.

    Example:
        >>> names, sub = most_confused(["a", "b", "c"], [[5, 2, 0], [3, 4, 0], [0, 0, 6]], 2)
        >>> names, sub.tolist()
        (['a', 'b'], [[5.0, 2.0], [3.0, 4.0]])
    """
    z = _square(labels, matrix)
    off = z - np.diag(np.diag(z))
    errors = off.sum(axis=0) + off.sum(axis=1)
    keep = sorted(np.argsort(-errors, kind="stable")[: max(1, n)].tolist())
    return [str(labels[i]) for i in keep], z[np.ix_(keep, keep)]


def confused_pairs(
    labels: Sequence[str], matrix: np.ndarray | Sequence[Sequence[float]], top: int = 50
) -> list[dict[str, object]]:
    """The confusions ranked by count: gold, predicted, count and the share of the gold intent's
    test utterances that went there.

    Example:
        >>> confused_pairs(["a", "b"], [[3, 1], [2, 2]])
        [{'gold': 'b', 'predicted as': 'a', 'count': 2, 'share': 0.5}, {'gold': 'a', 'predicted as': 'b', 'count': 1, 'share': 0.25}]
    """
    z = _square(labels, matrix)
    support = z.sum(axis=1)
    return [
        {
            "gold": gold,
            "predicted as": predicted,
            "count": count,
            "share": round(count / float(support[labels.index(gold)]), 2),
        }
        for gold, predicted, count in worst_pairs(list(labels), z, top=top)
    ]
