"""Intent names drawn on a map at their clusters, without piling up."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from app.plots.common import MapData, _gold_tuple, plain

# A name at font size 11 is about this many pixels per character, and this tall; the smallest
# plot area the Map tab draws is this tall (a 320 px figure at 1280x720, assets/style.css): names
# that do not overlap there do not overlap on a taller screen either.
_CHAR_PX, _LINE_PX, _PLOT_HEIGHT_PX = 6.6, 15.0, 290.0


def _uncluttered(
    names: Sequence[str],
    centres: Sequence[np.ndarray],
    sizes: Sequence[int],
    pts: np.ndarray,
    width_px: float,
) -> list[int]:
    """The names to draw so that none overlaps another (by their estimated boxes on a plot
    ``width_px`` wide): the biggest intents first; the others are still in each point's hover.

    Example:
        >>> pts = np.array([[0.0, 0.0], [100.0, 100.0]])
        >>> c = [np.array([50.0, 50.0]), np.array([50.5, 50.0]), np.array([90.0, 10.0])]
        >>> _uncluttered(["big", "small", "far"], c, [9, 2, 1], pts, 600)
        [0, 2]
    """
    if len(names) < 2 or not len(pts):
        return list(range(len(names)))
    span = np.ptp(pts, axis=0)
    per_px = (max(float(span[0]), 1e-9) / width_px, max(float(span[1]), 1e-9) / _PLOT_HEIGHT_PX)
    boxes: list[tuple[float, float, float, float]] = []
    kept: list[int] = []
    for i in sorted(range(len(names)), key=lambda k: (-sizes[k], names[k])):
        half_w = len(names[i]) * _CHAR_PX * per_px[0] / 2
        half_h = _LINE_PX * per_px[1] / 2
        x, y = float(centres[i][0]), float(centres[i][1])
        box = (x - half_w, x + half_w, y - half_h, y + half_h)
        if all(box[1] < b[0] or box[0] > b[1] or box[3] < b[2] or box[2] > b[3] for b in boxes):
            boxes.append(box)
            kept.append(i)
    return sorted(kept)


def centroid_labels(
    m: MapData, focus: Sequence[str] | None = None, *, width_px: float = 1200.0
) -> go.Scatter:
    """Each intent's name at the median of its labelled points (only the focused intents when
    there is a focus): a legend that cannot scroll away. Names that would overlap a bigger
    intent's are left out (:func:`_uncluttered`); every point still names its intent on hover.

    Example:
        >>> m = MapData([[0, 0], [2, 2], [9, 9]], [1, 2, 3], ["a", "b", "c"], ["x", "x", None],
        ...             [None] * 3, ["train"] * 3)
        >>> trace = centroid_labels(m)
        >>> list(trace.text), list(trace.x), list(trace.y)
        (['x'], [1.0], [1.0])
    """
    pts = np.asarray(m.points, dtype=np.float64).reshape(-1, 2) if len(m.ids) else np.zeros((0, 2))
    groups: dict[str, list[int]] = {}
    for i, g in enumerate(m.gold):
        names = _gold_tuple(g)
        if names:
            groups.setdefault(names[0], []).append(i)
    wanted = sorted(k for k in groups if not focus or k in set(focus))
    centres = [np.median(pts[groups[k]], axis=0) for k in wanted]
    keep = _uncluttered(wanted, centres, [len(groups[k]) for k in wanted], pts, width_px)
    wanted, centres = [wanted[i] for i in keep], [centres[i] for i in keep]
    return go.Scatter(
        x=[float(c[0]) for c in centres],
        y=[float(c[1]) for c in centres],
        text=[plain(k) for k in wanted],
        mode="text",
        textfont={"size": 11, "color": "#1f2937"},
        hoverinfo="skip",
        showlegend=False,
        name="intent names",
    )
