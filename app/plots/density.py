"""The shading under a map that draws a sample of its points (:mod:`app.services.design.map_points`):
how many of every row lie in each cell of a grid, as a grey heatmap beneath the points drawn, so a
region that holds 40,000 rows and a region that holds 400 do not look alike when only a sample of
each is drawn.

Example:
    >>> import numpy as np
    >>> trace = density_trace(np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]), ((0, 1), (0, 1)), 2)
    >>> [[v is not None for v in row] for row in trace.z]
    [[True, False], [False, True]]
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

BINS = 120  # cells across each axis
# white (no row) to a mid grey: the intents' colours stay readable on top
SHADES = [[0.0, "rgba(120,120,120,0.10)"], [1.0, "rgba(60,60,60,0.55)"]]


def density_trace(
    points: np.ndarray,
    axes: tuple[tuple[float, float], tuple[float, float]],
    bins: int = BINS,
) -> go.Heatmap:
    """Every point counted in a ``bins`` x ``bins`` grid over ``axes`` (the map's ranges),
    on a log scale (a dense cell does not hide the others); empty cells are left clear."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    (x0, x1), (y0, y1) = axes
    counts, xe, ye = np.histogram2d(pts[:, 0], pts[:, 1], bins=bins, range=[[x0, x1], [y0, y1]])
    z = counts.T  # a heatmap's rows are y
    return go.Heatmap(
        x=((xe[:-1] + xe[1:]) / 2).tolist(),
        y=((ye[:-1] + ye[1:]) / 2).tolist(),
        z=[[round(float(np.log1p(c)), 3) if c else None for c in row] for row in z],
        colorscale=SHADES,
        showscale=False,
        hoverinfo="skip",  # a point's hover wins wherever it is
        name="every row",
    )
