"""The geometry a map's names are placed with (:mod:`app.plots.labels`), in pixels: how far a box
is from a point, whether a line runs through a box, how long the line a browser draws from a
name back to its centre is, and how many points lie under a box."""

from __future__ import annotations

import numpy as np


def line_length(
    ax: float, ay: float, cx: np.ndarray, cy: np.ndarray, iw: float, ih: float
) -> np.ndarray:
    """The line a browser draws from a name's text (half-sizes ``iw`` x ``ih``, its middle at
    ``cx``, ``cy``) back to its centre (``ax``, ``ay``): from the text's edge, on the way from
    its middle to the centre; 0 where the text covers the centre.

    Example:
        >>> [round(float(x), 1) for x in line_length(0, 0, np.array([30.0, 30.0]),
        ...                                          np.array([0.0, 20.0]), 10, 5)]
        [20.0, 27.0]
    """
    ddx, ddy = cx - ax, cy - ay
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = np.minimum(
            np.where(ddx != 0, iw / np.abs(ddx), np.inf),
            np.where(ddy != 0, ih / np.abs(ddy), np.inf),
        )
    return np.hypot(ddx, ddy) * np.clip(1 - inside, 0, 1)


def shrunk(boxes: np.ndarray, share: float, less: float) -> np.ndarray:
    """``boxes`` (x0, y0, x1, y1 px) about the same middles, ``share`` of their width and
    ``less`` px lower: the text a browser draws inside the box kept free for it.

    Example:
        >>> shrunk(np.array([[0.0, 0.0, 100.0, 20.0]]), 0.9, 4.0).tolist()
        [[5.0, 2.0, 95.0, 18.0]]
    """
    cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
    hw = (boxes[:, 2] - boxes[:, 0]) * share / 2
    hh = np.maximum(boxes[:, 3] - boxes[:, 1] - less, 0) / 2
    return np.stack([cx - hw, cy - hh, cx + hw, cy + hh], axis=1)


def half_size(boxes: np.ndarray) -> tuple[float, float]:
    """The half width and half height of the first of ``boxes`` (all of a size)."""
    return float(boxes[0, 2] - boxes[0, 0]) / 2, float(boxes[0, 3] - boxes[0, 1]) / 2


def box_distance(boxes: np.ndarray, x: float, y: float) -> np.ndarray:
    """How far (px) each box is from the point (``x``, ``y``): 0 when it covers it."""
    ddx = np.maximum(np.maximum(boxes[:, 0] - x, 0), x - boxes[:, 2])
    ddy = np.maximum(np.maximum(boxes[:, 1] - y, 0), y - boxes[:, 3])
    return np.hypot(ddx, ddy)


def box_distance_to(boxes: np.ndarray, points: np.ndarray) -> np.ndarray:
    """:func:`box_distance` of every box (rows) to every point (columns)."""
    px, py = points[None, :, 0], points[None, :, 1]
    ddx = np.maximum(np.maximum(boxes[:, None, 0] - px, 0), px - boxes[:, None, 2])
    ddy = np.maximum(np.maximum(boxes[:, None, 1] - py, 0), py - boxes[:, None, 3])
    return np.hypot(ddx, ddy)


def apart_from(boxes: np.ndarray, region: np.ndarray, gap: float) -> np.ndarray:
    """Whether each box (x0, y0, x1, y1 px) is at least ``gap`` px clear of the box ``region``
    on one side: then it is as clear of every box inside ``region``.

    Example:
        >>> apart_from(np.array([[0.0, 0, 10, 10], [21.0, 0, 30, 10]]),
        ...            np.array([12.0, 0, 20, 10]), 2.0).tolist()
        [True, False]
    """
    x0, y0, x1, y1 = (float(v) for v in region)
    return (
        (x1 + gap <= boxes[:, 0])
        | (x0 >= boxes[:, 2] + gap)
        | (y1 + gap <= boxes[:, 1])
        | (y0 >= boxes[:, 3] + gap)
    )


def outside(segments: np.ndarray, region: np.ndarray) -> np.ndarray:
    """Whether each segment (x0, y0, x1, y1) lies wholly beside the box ``region``: then it runs
    through no box inside ``region`` (:func:`crosses`)."""
    x0, y0, x1, y1 = (float(v) for v in region)
    return (
        (np.maximum(segments[:, 0], segments[:, 2]) < x0)
        | (np.minimum(segments[:, 0], segments[:, 2]) > x1)
        | (np.maximum(segments[:, 1], segments[:, 3]) < y0)
        | (np.minimum(segments[:, 1], segments[:, 3]) > y1)
    )


def crosses(segments: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Whether each segment (rows: x0, y0, x1, y1) runs through each box (columns; their
    edges shrunk by a pixel: a line that only touches a name does not hide it), by clipping
    the segment to the box (Liang-Barsky)."""
    p0x, p0y = segments[:, None, 0], segments[:, None, 1]
    ddx, ddy = segments[:, None, 2] - p0x, segments[:, None, 3] - p0y
    t0 = np.zeros((len(segments), len(boxes)))
    t1 = np.ones_like(t0)
    inside = np.ones_like(t0, dtype=bool)
    for p, q in (
        (-ddx, p0x - (boxes[None, :, 0] + 1)),
        (ddx, (boxes[None, :, 2] - 1) - p0x),
        (-ddy, p0y - (boxes[None, :, 1] + 1)),
        (ddy, (boxes[None, :, 3] - 1) - p0y),
    ):
        p = np.broadcast_to(p, t0.shape)
        q = np.broadcast_to(q, t0.shape)
        parallel = p == 0
        inside &= ~(parallel & (q < 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(parallel, 0.0, q / np.where(parallel, 1.0, p))
        t0 = np.where(~parallel & (p < 0), np.maximum(t0, t), t0)
        t1 = np.where(~parallel & (p > 0), np.minimum(t1, t), t1)
    return inside & (t0 <= t1)


CELL = 8.0  # px of the grid points are counted in


def point_counts(px: np.ndarray, py: np.ndarray, width: float, height: float) -> np.ndarray:
    """The points of each grid cell, summed (an integral image: any box's count at once)."""
    nx, ny = int(width // CELL) + 1, int(height // CELL) + 1
    grid, _, _ = np.histogram2d(px, py, bins=(nx, ny), range=((0, nx * CELL), (0, ny * CELL)))
    return np.pad(grid.cumsum(0).cumsum(1), ((1, 0), (1, 0)))


def under(covered: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """How many points lie under each of ``boxes`` (x0, y0, x1, y1 px), by grid cells."""
    n, m = covered.shape[0] - 1, covered.shape[1] - 1
    x0 = np.clip((boxes[:, 0] // CELL).astype(int), 0, n)
    x1 = np.clip((boxes[:, 2] // CELL).astype(int) + 1, 0, n)
    y0 = np.clip((boxes[:, 1] // CELL).astype(int), 0, m)
    y1 = np.clip((boxes[:, 3] // CELL).astype(int) + 1, 0, m)
    return covered[x1, y1] - covered[x0, y1] - covered[x1, y0] + covered[x0, y0]
