"""Intent names on a map, placed for the plot the person has: each name at its intent's points
or just beside them, in dark text with a white halo, above the points.

The rules, for every name drawn (issue 65, measured in the page at 1280x720 and 1440x900):

- it overlaps no other name and stays inside the plot;
- it is nearer its own intent's centre than any other intent's (its text, not its middle: a
  name is read as belonging to the cluster it touches; for any text a browser may draw in the
  box kept free for it, :data:`TEXT_MIN` to :data:`TEXT_MAX`);
- where it cannot sit on its points, it sits at most :data:`MAX_LEADER_PX` away, and a short
  line leads back (as long as a browser draws it: from the text's edge); no line runs through
  another name, and no name lies on another's line;
- a name that finds no such place is not drawn (the centre of a big map is too crowded for 77
  names): the figure says how many (``layout.meta``), the Map's status line says it, and every
  point still names its intent on hover.

Names are Plotly annotations anchored at the intent's centre (data units) with their offset in
pixels: on a zoom the name keeps its place beside its points and the line its length. They are
placed for ``plot_px``, the plot area the page reports (:mod:`app.ui.map_js`), or for the
smallest the Map tab draws (:data:`PLOT_PX`, at 1280x720) when it has not said. Names go
biggest intent first.

Example:
    >>> m = MapData([[0, 0], [2, 2], [9, 9]], [1, 2, 3], ["a", "b", "c"], ["x", "x", None],
    ...             [None] * 3, ["train"] * 3)
    >>> [(a["text"], a["x"], a["y"]) for a in map_names(m, ranges(m)).annotations]
    [('x', 1.0, 1.0)]
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.plots.common import MapData, _gold_tuple, plain
from app.plots.label_geometry import (
    apart_from,
    box_distance,
    box_distance_to,
    crosses,
    half_size,
    line_length,
    outside,
    point_counts,
    shrunk,
    under,
)

NAME_PX = 12  # the names' font size
# A name's box at that size: each character's width in the app's sans-serif (generous: a box
# too small lets two names touch), the line's height, and a margin for the halo.
_NARROW, _WIDE, _CAPITAL, _CHAR = "ijlftr.,'!|:;1 ", "mwMW@", "ABCDEFGHKNOPQRSUVXYZ", 7.0
_LINE_PX, _PAD_PX = 15.0, 2.0
# The plot area of the smallest map (1280x720: the figure is 1216 x ~455 px less its margins);
# one of two maps side by side; the single map beside its legend (25 intents or fewer).
PLOT_PX = (1196.0, 425.0)
PANEL_PX = (560.0, 380.0)
LEGEND_PX = 250.0  # the legend's width, beside the plot
# A white halo: the text reads over points of any colour (CSS text-shadow, Plotly's font.shadow).
HALO = ", ".join(
    f"{x}px {y}px 1px #fff" for x, y in ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1))
)
NAME_COLOUR = "#111827"
LEADER = "rgba(55, 65, 81, 0.6)"  # the line from a name beside its points to them
MAX_LEADER_PX = 36.0  # how far (px) a name may sit from its intent's centre
_STEP_PX = 3.0  # the grid of places tried around a centre
_GAP_PX = 2.0  # between two names, and between a name and another intent's centre
# The text a browser draws is narrower and lower than the box kept free for it (the width
# estimate is generous, and the box has a margin for the halo): Chromium draws BANKING77's 77
# names 0.84-0.92 of the estimated width and 14 px high (the box: 19). A name's own centre and
# its line are measured to the least text it may be (:data:`TEXT_MIN`), the other intents'
# centres to the most (:data:`TEXT_MAX`): the rules hold for any text between the two.
TEXT_MIN = (0.84, 5.0)  # (share of the box's width, px less than its height)
TEXT_MAX = (0.93, 4.0)
_POINT_COST = 0.6  # px of distance a covered point is worth: names prefer empty space
_LINE_COST = 8.0  # px of distance a line is worth: a name stays on its points where it can
_AXIS_PAD = 0.04


def plot_area(
    figure_px: tuple[float, float] | None, *, top: float, legend: bool, panels: int = 1
) -> tuple[float, float] | None:
    """The plot area (px) of one panel of a map figure ``figure_px`` big (the page's size of it;
    None: not known, None back) with a top margin of ``top`` px, 10 px on the other sides, a
    legend beside it or not, and ``panels`` side by side (4 % of the width between them).

    Example:
        >>> plot_area((1216, 465), top=30, legend=False), plot_area(None, top=30, legend=False)
        ((1196, 425), None)
    """
    if figure_px is None:
        return None
    width = figure_px[0] - 20 - (LEGEND_PX if legend else 0)
    if panels > 1:
        width = width * (1 - 0.04 * (panels - 1)) / panels
    return max(width, 100), max(figure_px[1] - top - 10, 100)


@dataclass(frozen=True)
class Placed:
    """An intent's name: its points' centre (``anchor``, data units), where the name's middle
    goes from there (``offset``, px: right and down), and whether a line leads back (its box
    does not cover the centre)."""

    name: str
    anchor: tuple[float, float]
    offset: tuple[float, float]
    leader: bool


def ranges(m: MapData) -> tuple[tuple[float, float], tuple[float, float]]:
    """The axes' ranges a map is drawn (and its names placed) with: the points' extent and a
    margin."""
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


def anchors(m: MapData) -> list[tuple[str, np.ndarray, int]]:
    """(intent, the median of its labelled points, how many) for each intent on the map, sorted
    by name."""
    pts = _points(m)
    groups: dict[str, list[int]] = {}
    for i, g in enumerate(m.gold):
        names = _gold_tuple(g)
        if names:
            groups.setdefault(names[0], []).append(i)
    return [(k, np.median(pts[groups[k]], axis=0), len(groups[k])) for k in sorted(groups)]


def text_px(name: str) -> float:
    """The width (px) of ``name`` drawn at :data:`NAME_PX`, with its halo's margin.

    Example:
        >>> text_px("card_arrival") < text_px("MMMMMMMMMMMM")
        True
    """
    widths = (
        3.8 if c in _NARROW else 10.5 if c in _WIDE else 8.6 if c in _CAPITAL else _CHAR
        for c in name
    )
    return sum(widths) + 2 * _PAD_PX


def place_names(
    named: Sequence[tuple[str, np.ndarray, int]],
    pts: np.ndarray,
    xr: tuple[float, float],
    yr: tuple[float, float],
    plot_px: tuple[float, float] = PLOT_PX,
    shown: Sequence[str] | None = None,
) -> tuple[list[Placed], list[str]]:
    """Where each name of ``shown`` (default: all of ``named``: (name, centre, size)) goes on a
    plot of ``plot_px`` pixels showing ``xr`` x ``yr``, by the module's rules, biggest intent
    first, at the free place nearest its centre (a covered point counting as a little
    distance). The other intents whose centres a name keeps further from than its own are
    those shown (a focus: the others are grey, unnamed). Returns the names placed (by name) and
    those left out.

    Example:
        >>> pts = np.array([[0.0, 0.0], [100.0, 100.0]])
        >>> named = [("big", np.array([50.0, 50.0]), 9), ("small", np.array([51.0, 50.0]), 2)]
        >>> placed, hidden = place_names(named, pts, (0, 100), (0, 100), (600, 300))
        >>> [(p.name, p.offset[0] < 0, p.leader) for p in placed], hidden
        ([('big', True, False), ('small', False, True)], [])
        >>> twins = [*named, ("twin", np.array([50.0, 50.0]), 1)]  # big's centre: neither name
        >>> [p.name for p in place_names(twins, pts, (0, 100), (0, 100), (600, 300))[0]]
        ['small']
    """
    width, height = plot_px
    sx, sy = width / max(xr[1] - xr[0], 1e-12), height / max(yr[1] - yr[0], 1e-12)
    wanted = set(shown) if shown is not None else None
    named = [n for n in named if wanted is None or n[0] in wanted]
    centres = np.array(
        [[(float(c[0]) - xr[0]) * sx, (yr[1] - float(c[1])) * sy] for _, c, _ in named]
    ).reshape(-1, 2)
    covered = None
    if len(pts):
        covered = point_counts((pts[:, 0] - xr[0]) * sx, (yr[1] - pts[:, 1]) * sy, width, height)
    boxes = np.zeros((0, 4))  # the names placed: x0, y0, x1, y1 (px)
    lines = np.zeros((0, 4))  # their lines: from the centre to the name's middle (px)
    placed: list[Placed] = []
    hidden: list[str] = []
    order = sorted(range(len(named)), key=lambda i: (-named[i][2], named[i][0]))
    for i in order:
        name, anchor, _ = named[i]
        w, h = text_px(name), _LINE_PX + 2 * _PAD_PX
        others = np.delete(centres, i, axis=0)
        found = _best_place(centres[i], w, h, others, boxes, lines, covered, (width, height))
        if found is None:
            hidden.append(name)
            continue
        dx, dy, leader = found
        cx, cy = centres[i][0] + dx, centres[i][1] + dy
        boxes = np.vstack([boxes, [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]])
        if leader:
            lines = np.vstack([lines, [centres[i][0], centres[i][1], cx, cy]])
        at = (float(anchor[0]), float(anchor[1]))
        placed.append(Placed(name, at, (round(dx, 1), round(dy, 1)), leader))
    return sorted(placed, key=lambda p: p.name), sorted(hidden)


def _best_place(
    centre: np.ndarray,
    w: float,
    h: float,
    others: np.ndarray,
    boxes: np.ndarray,
    lines: np.ndarray,
    covered: np.ndarray | None,
    plot: tuple[float, float],
) -> tuple[float, float, bool] | None:
    """The cheapest place for a ``w`` x ``h`` name of the intent centred at ``centre`` (px)
    that keeps the module's rules: its middle's offset from the centre and whether a line leads
    back; None when there is none."""
    ax, ay = float(centre[0]), float(centre[1])
    reach_x, reach_y = w / 2 + MAX_LEADER_PX, h / 2 + MAX_LEADER_PX
    dx = np.arange(-reach_x, reach_x + _STEP_PX, _STEP_PX)
    dy = np.arange(-reach_y, reach_y + _STEP_PX, _STEP_PX)
    gx, gy = np.meshgrid(dx, dy, indexing="ij")
    cx, cy = (ax + gx).ravel(), (ay + gy).ravel()
    cand = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    least, most = shrunk(cand, *TEXT_MIN), shrunk(cand, *TEXT_MAX)  # the text a browser draws
    own = box_distance(least, ax, ay)
    lead = line_length(ax, ay, cx, cy, *half_size(least))
    ok = lead <= MAX_LEADER_PX
    ok &= (cand[:, 0] >= 0) & (cand[:, 1] >= 0) & (cand[:, 2] <= plot[0]) & (cand[:, 3] <= plot[1])
    if not ok.any():
        return None
    # Only what is near the places tried can break a rule there: the other centres within the
    # farthest own distance and a gap of them, the names not a gap clear of them, the lines
    # that reach them (the same answer; 300 names compared every place with every other name)
    region = np.array([cand[:, 0].min(), cand[:, 1].min(), cand[:, 2].max(), cand[:, 3].max()])
    reach = float(own[ok].max()) + _GAP_PX
    others = others[box_distance_to(region[None], others)[0] <= reach]
    boxes = boxes[~apart_from(boxes, region, _GAP_PX)]
    lines = lines[~outside(lines, region)]
    if len(others):  # nearer its own centre than any other intent's, by a gap
        near = np.min(box_distance_to(most[ok], others), axis=1)
        ok[ok] = own[ok] + _GAP_PX < near
    if len(boxes) and ok.any():  # apart from every name placed, by a gap
        c, b = cand[ok], boxes
        apart = (
            (c[:, None, 2] + _GAP_PX <= b[None, :, 0])
            | (c[:, None, 0] >= b[None, :, 2] + _GAP_PX)
            | (c[:, None, 3] + _GAP_PX <= b[None, :, 1])
            | (c[:, None, 1] >= b[None, :, 3] + _GAP_PX)
        )
        ok[ok] = apart.all(axis=1)
    if len(lines) and ok.any():  # on no other name's line
        ok[ok] = ~crosses(lines, cand[ok]).any(axis=0)
    if len(boxes) and ok.any():  # its own line through no other name
        leads = ok & (lead > 0)
        n = int(leads.sum())
        segs = np.stack([np.full(n, ax), np.full(n, ay), cx[leads], cy[leads]], axis=1)
        ok[leads] = ~crosses(segs, boxes).any(axis=1)
    if not ok.any():
        return None
    # on its points, the most centred place, unless a line's worth of px away is much emptier
    cost = lead + _LINE_COST * (lead > 0) + 0.02 * np.hypot(cx - ax, cy - ay)
    if covered is not None:
        cost = cost + _POINT_COST * under(covered, cand)
    best = int(np.argmin(np.where(ok, cost, np.inf)))
    return float(cx[best] - ax), float(cy[best] - ay), bool(lead[best] > 0)


def as_annotations(
    placed: Sequence[Placed], *, xref: str = "x", yref: str = "y"
) -> list[dict[str, Any]]:
    """The names as Plotly annotations at their intents' centres, offset in pixels (plain text,
    with a halo; a line back to the centre where the name is beside its points)."""
    out: list[dict[str, Any]] = []
    for p in placed:
        dx, dy = p.offset
        one: dict[str, Any] = {
            "text": plain(p.name),
            "name": "intent name",
            "x": p.anchor[0],
            "y": p.anchor[1],
            "xref": xref,
            "yref": yref,
            "font": {"size": NAME_PX, "color": NAME_COLOUR, "shadow": HALO},
        }
        if p.leader:  # the text's middle at the line's tail (px from the head, down is +)
            one.update(
                ax=dx, ay=dy, axref="pixel", ayref="pixel", showarrow=True, arrowhead=0,
                arrowwidth=1, arrowcolor=LEADER, standoff=2,
            )  # fmt: skip
        else:
            one.update(xshift=dx, yshift=-dy, showarrow=False)
        out.append(one)
    return out


@dataclass(frozen=True)
class Names:
    """A map's names: the annotations to draw, every intent's centre (data units) and the names
    that found no place."""

    annotations: list[dict[str, Any]]
    centres: dict[str, tuple[float, float]]
    hidden: list[str]

    def meta(self) -> dict[str, Any]:
        """What the figure's ``layout.meta`` says of its names (each as its annotation's text,
        escaped: :func:`app.plots.common.plain`): every intent's ``centres`` the names were kept
        near, and the names that found no place (``names_hidden``), which the Map's status line
        counts."""
        return {
            "centres": {plain(k): v for k, v in self.centres.items()},
            "names_hidden": [plain(n) for n in self.hidden],
        }


# The placings of late, by what decides them: the Map's timer redraws the same map every second
# while a projection runs, and a page's size or a zoom asks for it again (300 names: a third of
# a second of CPU a placing on a 2-core Xeon).
_RECENT: OrderedDict[bytes, tuple[list[Placed], list[str]]] = OrderedDict()
_RECENT_LOCK = threading.Lock()
RECENT_PLACINGS = 32


def _placing_key(
    named: Sequence[tuple[str, np.ndarray, int]],
    pts: np.ndarray,
    axes: tuple[tuple[float, float], tuple[float, float]],
    plot_px: tuple[float, float],
    focus: Sequence[str] | None,
) -> bytes:
    """What decides a placing (:func:`place_names`), hashed."""
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(pts, dtype=np.float64).tobytes())
    centres = [(n, float(c[0]), float(c[1]), int(k)) for n, c, k in named]
    h.update(repr((centres, axes, plot_px, tuple(sorted(focus or ())))).encode())
    return h.digest()


def map_names(
    m: MapData,
    axes: tuple[tuple[float, float], tuple[float, float]],
    focus: Sequence[str] | None = None,
    *,
    plot_px: tuple[float, float] = PLOT_PX,
    xref: str = "x",
    yref: str = "y",
) -> Names:
    """The names on the map ``m`` drawn with ``axes`` (:func:`ranges`) on a plot of
    ``plot_px``: every intent's (or the ``focus``'s), by :func:`place_names`, with the centres
    they were kept near (the shown intents'). The same map, axes, plot and focus asked again
    get the placing of then (the last :data:`RECENT_PLACINGS` are kept)."""
    named, pts = anchors(m), _points(m)
    key = _placing_key(named, pts, axes, plot_px, focus)
    with _RECENT_LOCK:
        found = _RECENT.get(key)
        if found is not None:
            _RECENT.move_to_end(key)
    if found is None:
        found = place_names(named, pts, axes[0], axes[1], plot_px, focus or None)
        with _RECENT_LOCK:
            _RECENT[key] = found
            while len(_RECENT) > RECENT_PLACINGS:
                _RECENT.popitem(last=False)
    placed, hidden = found
    centres = {n: (float(c[0]), float(c[1])) for n, c, _ in named if not focus or n in focus}
    return Names(as_annotations(placed, xref=xref, yref=yref), centres, list(hidden))
