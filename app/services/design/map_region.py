"""What a lasso (or a box) on the Map selects: every row inside it, drawn or not (issue 72 item
4). The page sends the region in the map's coordinates with the view it was drawn from (the
figure's ``layout.meta["view"]``: :mod:`app.services.design.map_figures`), and
:func:`select_region` tests every row's place on that view against it.

Example:
    >>> inside(np.array([[0.5, 0.5], [2.0, 2.0]]), [0, 1, 1, 0], [0, 0, 1, 1]).tolist()
    [True, False]
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.access import ProjectHandle
from app.serving.map_store import MapStore


def inside(points: np.ndarray, xs: Sequence[float], ys: Sequence[float]) -> np.ndarray:
    """Which ``points`` lie inside the polygon of vertices ``(xs[i], ys[i])`` (closed; the
    even-odd rule, as plotly's lasso decides for the points it draws), for every point at once."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    vx, vy = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    out = np.zeros(len(pts), dtype=bool)
    # only the points in the polygon's bounding box are tested edge by edge
    near = np.flatnonzero(
        (pts[:, 0] >= vx.min())
        & (pts[:, 0] <= vx.max())
        & (pts[:, 1] >= vy.min())
        & (pts[:, 1] <= vy.max())
    )
    px, py = pts[near, 0], pts[near, 1]
    hit = np.zeros(len(near), dtype=bool)
    for k in range(len(vx)):
        x0, y0, x1, y1 = vx[k - 1], vy[k - 1], vx[k], vy[k]
        crosses = (y0 > py) != (y1 > py)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = x0 + (py - y0) * (x1 - x0) / (y1 - y0)
        hit ^= crosses & (px < at)
    out[near[hit]] = True
    return out


def parse_region(text: str | None) -> tuple[str, list[float], list[float]]:
    """The view and the polygon a page sent: ``{"view": ..., "x": [...], "y": [...]}`` (a lasso's
    vertices) or ``{"view": ..., "box": [[x0, x1], [y0, y1]]}`` (a box).

    Raises:
        ValueError: anything else, in words.
    """
    try:
        region = json.loads(text or "")
    except ValueError:
        region = None
    if not isinstance(region, dict) or not isinstance(region.get("view"), str):
        raise ValueError("No region was selected on the map: draw a lasso or a box on it.")
    xs: Any
    ys: Any
    if "box" in region:
        try:
            (x0, x1), (y0, y1) = region["box"]
        except (TypeError, ValueError):
            raise ValueError("The box selected on the map is not a box.") from None
        xs, ys = [x0, x1, x1, x0], [y0, y0, y1, y1]
    else:
        xs, ys = region.get("x"), region.get("y")
    if not isinstance(xs, list) or not isinstance(ys, list) or len(xs) != len(ys) or len(xs) < 3:
        raise ValueError("The lasso on the map needs three points at least.")
    numbers = [isinstance(v, int | float) and not isinstance(v, bool) for v in [*xs, *ys]]
    if not all(numbers) or not all(math.isfinite(v) for v in [*xs, *ys]):
        raise ValueError("The region selected on the map has a place that is not a number.")
    return region["view"], [float(v) for v in xs], [float(v) for v in ys]


def select_region(maps: MapStore, p: ProjectHandle, region: str | None) -> tuple[list[int], int]:
    """The ids of every row of ``p``'s map inside the region a page sent (:func:`parse_region`),
    drawn or not, in id order, and how many rows the map holds.

    Raises:
        ValueError: a region that is none, or a view that is not this project's or no longer
            kept (the map was drawn again since: select again).
    """
    token, xs, ys = parse_region(region)
    view = maps.by_token(token)
    if view is None or view.project != p.name:
        raise ValueError("The map changed since it was drawn: select the region again.")
    hit = np.flatnonzero(inside(view.points, xs, ys))
    return sorted(int(view.ids[i]) for i in hit), len(view.ids)
