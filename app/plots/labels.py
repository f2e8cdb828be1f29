"""Intent names on a map: every intent named, each name where it overlaps no other name and stays
inside the plot, as near its intent's points as it can be (a thin line leads back to them when
it had to move away), in dark text with a white halo, above the points.

Names are Plotly annotations: they are drawn over the WebGL layer that holds the points (a text
trace is drawn under it, and a big map hid most names under its points). They are placed for the
smallest plot the Map tab draws (:data:`PLOT_PX`, at 1280x720: assets/style.css), in data units:
on a bigger screen both axes only grow while the text keeps its size, so names apart there stay
apart. A name that finds no free place (hundreds of intents on a small plot) is left out; every
point still names its intent on hover.

Example:
    >>> m = MapData([[0, 0], [2, 2], [9, 9]], [1, 2, 3], ["a", "b", "c"], ["x", "x", None],
    ...             [None] * 3, ["train"] * 3)
    >>> [(a["text"], a["x"], a["y"]) for a in name_annotations(m, ranges(m))]
    [('x', 1.0, 1.0)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.plots.common import MapData, _gold_tuple, plain

NAME_PX = 12  # the names' font size
# A name's box at that size: a generous average character width of the app's sans-serif, the
# line's height, and a margin for the halo.
_CHAR_PX, _LINE_PX, _PAD_PX = 7.0, 16.0, 2.0
# The plot area of the smallest map (1280x720: the figure is 1216 x ~455 px less its margins);
# one of two maps side by side; the single map beside its legend (25 intents or fewer).
PLOT_PX = (1196.0, 425.0)
PANEL_PX = (560.0, 380.0)
LEGEND_PLOT_PX = (950.0, 425.0)
# A white halo: the text reads over points of any colour (CSS text-shadow, Plotly's font.shadow).
HALO = ", ".join(
    f"{x}px {y}px 1px #fff" for x, y in ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1))
)
NAME_COLOUR = "#111827"
LEADER = "rgba(55, 65, 81, 0.6)"  # the line from a moved name to its intent's points
_POINT_COST = 1.5  # px of distance a covered point is worth: names prefer empty space
_NEAR = (288.0, 144.0)  # how far (px) a name looks around its points before the whole plot
_AXIS_PAD = 0.04


@dataclass(frozen=True)
class Placed:
    """An intent's name: its points' centre (``anchor``, data units), where the name's centre
    goes (``at``), and whether it had to move off its points (then a line leads back)."""

    name: str
    anchor: tuple[float, float]
    at: tuple[float, float]
    moved: bool


def ranges(m: MapData) -> tuple[tuple[float, float], tuple[float, float]]:
    """The axes' ranges a map is drawn (and its names placed) with: the points' extent and a
    margin, fixed so that the names' places mean the same pixels as they were placed for."""
    pts = _points(m)
    out = []
    for col in range(2):
        lo, hi = (float(pts[:, col].min()), float(pts[:, col].max())) if len(pts) else (0.0, 1.0)
        pad = max(hi - lo, 1e-6) * _AXIS_PAD
        out.append((lo - pad, hi + pad))
    return out[0], out[1]


def _points(m: MapData) -> np.ndarray:
    if not len(m.ids):
        return np.zeros((0, 2))
    return np.asarray(m.points, dtype=np.float64).reshape(-1, 2)


def anchors(m: MapData, focus: Sequence[str] | None = None) -> list[tuple[str, np.ndarray, int]]:
    """(intent, the median of its labelled points, how many) for each intent on the map (the
    focused ones only, when there is a focus), sorted by name."""
    pts = _points(m)
    groups: dict[str, list[int]] = {}
    for i, g in enumerate(m.gold):
        names = _gold_tuple(g)
        if names:
            groups.setdefault(names[0], []).append(i)
    wanted = sorted(k for k in groups if not focus or k in set(focus))
    return [(k, np.median(pts[groups[k]], axis=0), len(groups[k])) for k in wanted]


def place_names(
    named: Sequence[tuple[str, np.ndarray, int]],
    pts: np.ndarray,
    xr: tuple[float, float],
    yr: tuple[float, float],
    plot_px: tuple[float, float] = PLOT_PX,
) -> list[Placed]:
    """Where each of ``named`` (name, anchor, size) goes on a plot of ``plot_px`` pixels showing
    ``xr`` x ``yr``: the biggest intents first, each name at the free place (overlapping no name
    placed, inside the plot) nearest its anchor, a covered point counting as a little distance;
    a name with no free place is left out.

    Example:
        >>> pts = np.array([[0.0, 0.0], [100.0, 100.0]])
        >>> named = [("big", np.array([50.0, 50.0]), 9), ("small", np.array([50.5, 50.0]), 2)]
        >>> [(p.name, p.moved) for p in place_names(named, pts, (0, 100), (0, 100), (600, 300))]
        [('big', False), ('small', True)]
    """
    width, height = plot_px
    sx, sy = width / max(xr[1] - xr[0], 1e-12), height / max(yr[1] - yr[0], 1e-12)

    def to_px(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (x - xr[0]) * sx, (yr[1] - y) * sy

    covered = _point_counts(*to_px(pts[:, 0], pts[:, 1]), width, height) if len(pts) else None
    boxes = np.zeros((0, 4))  # placed names: x0, y0, x1, y1 (px)
    out: list[Placed] = []
    for name, anchor, _ in sorted(named, key=lambda n: (-n[2], n[0])):
        ax, ay = (float(v[0]) for v in to_px(np.array([anchor[0]]), np.array([anchor[1]])))
        w = len(name) * _CHAR_PX + 2 * _PAD_PX
        h = _LINE_PX + 2 * _PAD_PX
        found = None
        for reach, step in ((_NEAR, (12.0, 8.0)), ((width, height), (24.0, 16.0))):
            found = _free_place(ax, ay, w, h, boxes, covered, reach, step, (width, height))
            if found is not None:
                break
        if found is None:
            continue
        dx, dy = found
        cx, cy = ax + dx, ay + dy
        boxes = np.vstack([boxes, [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]])
        x, y = float(anchor[0]), float(anchor[1])
        moved = abs(dx) > w / 2 or abs(dy) > h / 2
        out.append(Placed(name, (x, y), (x + dx / sx, y - dy / sy), moved))
    return sorted(out, key=lambda p: p.name)


_CELL = 8.0  # px of the grid points are counted in


def _point_counts(px: np.ndarray, py: np.ndarray, width: float, height: float) -> np.ndarray:
    """The points of each grid cell, summed (an integral image: any box's count at once)."""
    nx, ny = int(width // _CELL) + 1, int(height // _CELL) + 1
    grid, _, _ = np.histogram2d(px, py, bins=(nx, ny), range=((0, nx * _CELL), (0, ny * _CELL)))
    return np.pad(grid.cumsum(0).cumsum(1), ((1, 0), (1, 0)))


def _under(covered: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """How many points lie under each of ``boxes`` (x0, y0, x1, y1 px), by grid cells."""
    n, m = covered.shape[0] - 1, covered.shape[1] - 1
    x0 = np.clip((boxes[:, 0] // _CELL).astype(int), 0, n)
    x1 = np.clip((boxes[:, 2] // _CELL).astype(int) + 1, 0, n)
    y0 = np.clip((boxes[:, 1] // _CELL).astype(int), 0, m)
    y1 = np.clip((boxes[:, 3] // _CELL).astype(int) + 1, 0, m)
    return covered[x1, y1] - covered[x0, y1] - covered[x1, y0] + covered[x0, y0]


def _free_place(
    ax: float,
    ay: float,
    w: float,
    h: float,
    boxes: np.ndarray,
    covered: np.ndarray | None,
    reach: tuple[float, float],
    step: tuple[float, float],
    plot: tuple[float, float],
) -> tuple[float, float] | None:
    """The cheapest free place for a ``w`` x ``h`` box within ``reach`` of the anchor (``ax``,
    ``ay``), on a grid of ``step``: its centre's offset from the anchor (px); None when every
    place is taken."""
    dx = np.arange(-reach[0], reach[0] + step[0], step[0])
    dy = np.arange(-reach[1], reach[1] + step[1], step[1])
    cx = (ax + dx[:, None] + 0 * dy[None, :]).ravel()
    cy = (ay + 0 * dx[:, None] + dy[None, :]).ravel()
    cand = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    ok = (cand[:, 0] >= 0) & (cand[:, 1] >= 0) & (cand[:, 2] <= plot[0]) & (cand[:, 3] <= plot[1])
    if len(boxes):
        apart = (
            (cand[:, None, 2] <= boxes[None, :, 0])
            | (cand[:, None, 0] >= boxes[None, :, 2])
            | (cand[:, None, 3] <= boxes[None, :, 1])
            | (cand[:, None, 1] >= boxes[None, :, 3])
        )
        ok &= apart.all(axis=1)
    if not ok.any():
        return None
    cost = np.hypot(cx - ax, 1.5 * (cy - ay))
    if covered is not None:
        cost = cost + _POINT_COST * _under(covered, cand)
    best = int(np.argmin(np.where(ok, cost, np.inf)))
    return float(cx[best] - ax), float(cy[best] - ay)


def as_annotations(
    placed: Sequence[Placed], *, xref: str = "x", yref: str = "y"
) -> list[dict[str, Any]]:
    """The names as Plotly annotations (plain text, with a halo; a line to the points of a name
    that moved off them)."""
    out: list[dict[str, Any]] = []
    for p in placed:
        one: dict[str, Any] = {
            "text": plain(p.name),
            "name": "intent name",
            "xref": xref,
            "yref": yref,
            "font": {"size": NAME_PX, "color": NAME_COLOUR, "shadow": HALO},
        }
        if p.moved:  # the text centred at the line's tail, the line's head on the points
            one.update(
                x=p.anchor[0], y=p.anchor[1], ax=p.at[0], ay=p.at[1], axref=xref, ayref=yref,
                showarrow=True, arrowhead=0, arrowwidth=1, arrowcolor=LEADER, standoff=3,
            )  # fmt: skip
        else:
            one.update(x=p.at[0], y=p.at[1], showarrow=False)
        out.append(one)
    return out


def name_annotations(
    m: MapData,
    axes: tuple[tuple[float, float], tuple[float, float]],
    focus: Sequence[str] | None = None,
    *,
    plot_px: tuple[float, float] = PLOT_PX,
    xref: str = "x",
    yref: str = "y",
) -> list[dict[str, Any]]:
    """Every intent's name on the map ``m`` drawn with ``axes`` (:func:`ranges`) on a plot of
    ``plot_px``: :func:`place_names`, as :func:`as_annotations`."""
    placed = place_names(anchors(m, focus), _points(m), axes[0], axes[1], plot_px)
    return as_annotations(placed, xref=xref, yref=yref)
