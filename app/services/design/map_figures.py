"""A map's figures (issue 72 item 4: a map of every row at any size): which of a map's points
its figure draws, the single map and two side by side, and how each intent moved between them.

A map holds every row of its project. Its figure draws at most :data:`DRAWN_MAX` points (a browser
draws 20,000 WebGL points smoothly; a figure of 250,000 with their hover texts is hundreds of
megabytes): every labelled row, the rows a view asks to keep (a candidate intent's), and a sample
of the others, the same one in every view of the same rows (each row's place in the sample comes
from its id alone), over a grey shading that counts every row (:mod:`app.plots.density`). The
figure's ``layout.meta`` says how many rows the points stand for (``n_rows``) and names its view
(``view``), which a lasso is tested against (:mod:`app.services.design.map_region`).

Example: ``map_figure(compute_map(maps, p, method="pca"))``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from app.plots import MapData, scatter_map, side_by_side
from app.plots.density import density_trace
from app.plots.labels import ranges
from app.serving.map_store import MapView
from core.evaluation.space import geometry_diff

DRAWN_MAX = 20_000  # the most points a map's figure draws (the others: the shading beneath)
PER_POINT = ("ids", "texts", "gold", "predicted", "margins", "splits")


def drawn_rows(view: MapView, *, keep: Iterable[int] = (), cap: int | None = None) -> np.ndarray:
    """The positions of the points a figure of ``view`` draws: all of them up to ``cap``
    (:data:`DRAWN_MAX`); past it every labelled row and every id of ``keep`` first, then the
    other rows by a rank each one's id alone gives (the same rows in every view of them).

    Example:
        >>> v = MapView("p", "v", "pca", [1, 2, 3], ["a", "b", "c"], [("x",), (), ()],
        ...             [None] * 3, [0.0] * 3, ["train", "unlabelled", "unlabelled"],
        ...             np.zeros((3, 2)))
        >>> drawn_rows(v, cap=2).tolist()[0], len(drawn_rows(v, cap=2))
        (0, 2)
    """
    return sample_positions(view.ids, _always(view, keep), cap)


def sample_positions(ids: Sequence[int], first: np.ndarray, cap: int | None = None) -> np.ndarray:
    """The positions of the rows a sample of at most ``cap`` (:data:`DRAWN_MAX`) of those with
    ``ids`` holds: all of them up to ``cap``, else those marked ``first`` first, then the others,
    each by a rank its id alone gives."""
    n = len(ids)
    cap = DRAWN_MAX if cap is None else cap
    if n <= cap:
        return np.arange(n)
    order = np.lexsort((_rank(np.asarray(ids, dtype=np.int64)), ~first))
    return np.sort(order[:cap])


def _always(view: MapView, keep: Iterable[int] = ()) -> np.ndarray:
    """Which rows a sample draws first: the labelled ones and those of ``keep``."""
    wanted = set(keep)
    return np.array(
        [
            bool(g) or s != "unlabelled" or int(i) in wanted
            for g, s, i in zip(view.gold, view.splits, view.ids, strict=True)
        ],
        dtype=bool,
    )


def drawn_meta(view: MapView, at: np.ndarray, keep: Iterable[int] = ()) -> dict[str, Any]:
    """What a figure's ``layout.meta`` says of the rows it draws (``at``): how many the map
    holds (``n_rows``) and, when it draws a sample, how many of the others it draws of how many
    (``others``: the rows not drawn first)."""
    out: dict[str, Any] = {"n_rows": len(view.ids)}
    if len(at) < len(view.ids):
        first = int(_always(view, keep).sum())
        out["others"] = [max(0, len(at) - first), len(view.ids) - first]
    return out


def _rank(ids: np.ndarray) -> np.ndarray:
    """A shuffled rank of each id, from the id alone (Knuth's multiplicative hash)."""
    return (ids.astype(np.uint64) * np.uint64(2654435761)) % np.uint64(2**32)


def cut(view: MapView, at: Sequence[int] | np.ndarray) -> MapView:
    """``view`` with only the points at positions ``at`` (the rows a figure draws)."""
    picked: dict[str, Any] = {f: [getattr(view, f)[i] for i in at] for f in PER_POINT}
    return dataclasses.replace(view, **picked, points=view.points[np.asarray(at, dtype=np.int64)])


def map_data(view: MapView) -> MapData:
    """A view as the figures draw it (:mod:`app.plots`; the serving state knows no figures)."""
    return MapData(
        view.points, view.ids, view.texts, view.gold, view.predicted, view.splits, view.margins
    )


def map_figure(
    view: MapView,
    *,
    highlight: str | None = None,
    focus: Sequence[str] | None = None,
    names: bool | None = None,
    figure_px: tuple[float, float] | None = None,
    top: int | None = None,
    zoom: tuple[tuple[float, float], tuple[float, float]] | None = None,
    keep: Sequence[int] = (),
) -> go.Figure:
    """The single-map figure of a view (``focus``: intents to isolate; ``names`` at centroids,
    placed for ``figure_px`` and the ``zoom``: :func:`app.plots.maps.scatter_map`): a sample of
    its points past :data:`DRAWN_MAX` (``keep``: ids drawn
    whatever the sample) over the shading of every row; ``layout.meta`` says how many rows
    the map holds (``n_rows``) and names the view (``view``: what a lasso is tested against)."""
    at = drawn_rows(view, keep=keep)
    sampled = len(at) < len(view.ids)
    if sampled:
        zoom = zoom or ranges(map_data(view))  # every row's extent, not the sample's
    m = map_data(cut(view, at) if sampled else view)
    fig = scatter_map(
        m.points,
        m.ids,
        m.texts,
        m.gold,
        m.predicted,
        m.splits,
        margins=m.margins,
        highlight=highlight,
        title=f"{view.version_label} · {view.method}",
        focus=focus,
        names=names,
        figure_px=figure_px,
        top=top,
        zoom=zoom,
    )
    if sampled and zoom is not None:
        fig.add_trace(density_trace(view.points, zoom))
        fig.data = (fig.data[-1], *fig.data[:-1])  # beneath the points
    fig.layout.meta = {
        **dict(fig.layout.meta or {}),
        **drawn_meta(view, at, keep),
        "view": view.token,
    }
    return fig


def compare_figure(
    left: MapView,
    right: MapView,
    *,
    highlight: str | None = None,
    focus: Sequence[str] | None = None,
    names: bool | None = None,
    figure_px: tuple[float, float] | None = None,
) -> go.Figure:
    """Two views side by side, the right one aligned onto the left, metrics in the titles (the
    same sample of rows in both past :data:`DRAWN_MAX`)."""
    at = drawn_rows(left)
    fig = side_by_side(
        map_data(cut(left, at)),
        map_data(cut(right, drawn_rows(right))),
        (left.version_label, right.version_label),
        left.metrics,
        right.metrics,
        highlight=highlight,
        focus=focus,
        names=names,
        figure_px=figure_px,
    )
    fig.layout.meta = {**dict(fig.layout.meta or {}), **drawn_meta(left, at)}
    return fig


def map_diff(left: MapView, right: MapView) -> list[dict[str, Any]]:
    """How each intent moved from the left version to the right one, biggest movement first:
    its spread (mean distance to its centre, lower = tighter) and its gap to the nearest other
    intent (higher = further apart), measured in the encoders' spaces, not on the 2D maps."""
    return geometry_diff(left.geometry, right.geometry)
