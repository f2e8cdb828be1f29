"""What the Map tab draws (:mod:`app.ui.map_tab`): the map of one version, or two side by side
with how each intent moved, its intents' names placed for the size the figure has on the page
(:mod:`app.plots.labels`), and the status line above it, which says how many names found no
place."""

from __future__ import annotations

import contextvars
import functools
import math
import re
from collections.abc import Callable
from typing import Any, ParamSpec

import gradio as gr

from app.access import ProjectHandle
from app.services.design import maps as svc
from app.services.labelling import data as data_svc
from app.services.models import versions as version_svc
from app.services.models.versions import ACTIVE, BASE, Version
from app.serving.map_store import MapStore
from app.ui.common import attempt, problem
from storage.ids import parse_id

VIEW_CHOICES = ["active model", "compare two versions"]
BASE_CHOICE, ACTIVE_CHOICE = "frozen base encoder", "active model"
TOP_PX = 30  # the single map's top margin: the status line sits in it (css)
_SIZE = re.compile(r"(\d{2,5})x(\d{2,5})")
P = ParamSpec("P")


def parse_size(text: str | None) -> tuple[float, float] | None:
    """The figure's size as the page reports it (``"1216x465"``); None when it has not.

    Example:
        >>> parse_size("1216x465"), parse_size("")
        ((1216.0, 465.0), None)
    """
    m = _SIZE.fullmatch((text or "").strip())
    return (float(m[1]), float(m[2])) if m else None


def parse_zoom(text: str | None) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The ranges the person zoomed the map to, as the page reports them (``"x0,x1,y0,y1"``);
    None for the whole map.

    Example:
        >>> parse_zoom("-1.5,2,0,3.25"), parse_zoom(""), parse_zoom("1,1,0,1")
        (((-1.5, 2.0), (0.0, 3.25)), None, None)
    """
    try:
        x0, x1, y0, y1 = (float(v) for v in (text or "").split(","))
    except ValueError:
        return None
    if not all(map(math.isfinite, (x0, x1, y0, y1))) or x0 >= x1 or y0 >= y1:
        return None
    return (x0, x1), (y0, y1)


def hidden_names(meta: dict[str, Any], annotations: Any = (), side_by_side: bool = False) -> str:
    """The status line's words for the names the figure does not draw ("" for none), counted
    from its ``annotations`` (the names drawn, per map: ``xref`` x, and x2 on the right of two
    side by side), so the count is what the screen shows: two maps side by side said how many
    names either one hid (issue 75 item 6).

    Example:
        >>> meta = {"names_hidden": ["a", "b"], "centres": {"a": 0, "b": 0, "c": 0}}
        >>> hidden_names(meta, [{"name": "intent name", "xref": "x", "text": "c"}])
        ' · 2 of 3 names hidden where the map is crowded: hover a point, zoom in, or pick the intent in Show intents'
        >>> drawn = (("x", "c"), ("x2", "b"), ("x2", "c"))  # the left hid a and b, the right a
        >>> both = [{"name": "intent name", "xref": x, "text": t} for x, t in drawn]
        >>> hidden_names({"names_hidden": ["a", "b"]}, both, side_by_side=True).split(" where")[0]
        ' · 2 of 3 names hidden on the left, 1 on the right'
    """
    if not meta.get("names_hidden"):
        return ""
    drawn: dict[str, int] = {}
    for a in annotations:
        if a["name"] == "intent name":
            drawn[a["xref"]] = drawn.get(a["xref"], 0) + 1
    # the intents named: those of the map (side by side: both maps', the focus's when one is)
    named = len(meta.get("centres") or {}) or len(
        {*meta["names_hidden"], *(a["text"] for a in annotations if a["name"] == "intent name")}
    )
    panels = ("x", "x2") if side_by_side else ("x",)
    hidden = [named - drawn.get(x, 0) for x in panels]
    if not any(hidden):
        return ""
    counts = (
        f"{hidden[0]} of {named} names hidden"
        if len(hidden) == 1
        else f"{hidden[0]} of {named} names hidden on the left, {hidden[1]} on the right"
    )
    return (
        f" · {counts} where the map is crowded: hover a point, zoom in, or pick the intent in "
        "Show intents"
    )


def drawn_words(drawn: int, others_drawn: int, others: int, comparing: bool = False) -> str:
    """The status line's words for a map that draws a sample of its rows.

    Example:
        >>> drawn_words(20000, 16152, 246152)
        '20,000 drawn: every labelled one and 16,152 of the 246,152 others, each for about 15 (the shading counts every row; a lasso selects every row inside it)'
    """
    each = f", each for about {round(others / others_drawn)}" if others_drawn else ""
    tail = (
        "" if comparing else " (the shading counts every row; a lasso selects every row inside it)"
    )
    return f"{drawn:,} drawn: every labelled one and {others_drawn:,} of the {others:,} others{each}{tail}"


def version_selector(choice: str | None) -> Version:
    """A version picker's choice as a selector: the frozen base, the active model or ``vN``."""
    if choice == BASE_CHOICE:
        return BASE
    m = re.fullmatch(r"v(\d+)", choice or "")
    return parse_id(m.group(1), "version number") if m else ACTIVE


def diff_frame(rows: list[dict[str, Any]]) -> Any:
    """The map diff as a table for people: two decimals, signed changes."""

    def r2(x: float | None) -> str:
        return "–" if x is None else f"{x:.2f}"

    return gr.update(
        value=[
            [
                r["intent"],
                r["n"],
                f"{r2(r['spread_before'])} → {r2(r['spread_after'])}",
                f"{r['tighter']:+.2f}",
                r["nearest_after"] or "",
                f"{r2(r['gap_before'])} → {r2(r['gap_after'])}",
                f"{r['further']:+.2f}",
            ]
            for r in rows
        ],
        visible=bool(rows),
    )


def render(
    maps: MapStore,
    p: ProjectHandle | None,
    meth: str,
    mode: str,
    hl: str,
    focus: list[str] | None = None,
    names: bool = True,
    left_choice: str | None = BASE_CHOICE,
    right_choice: str | None = ACTIVE_CHOICE,
    size: str | None = None,
    zoom: str | None = None,
) -> tuple[Any, ...]:
    """The map (or two side by side, how each intent moved), ``focus`` isolated, names on it,
    placed for the figure's ``size`` on the page (``"1216x465"``: :data:`app.ui.map_js.BIND_JS`
    reports it; empty: not known yet) and, on the single map, the ranges the person ``zoom``-ed
    to (``"x0,x1,y0,y1"``; empty: the whole map)."""
    comparing = mode != VIEW_CHOICES[0]
    figure_px = parse_size(size)
    box = parse_zoom(zoom)
    pickers = gr.update(visible=comparing)
    no_diff = gr.update(visible=False)
    if p is None:
        idle = gr.update(active=False)
        return None, "Pick a project.", idle, gr.update(), gr.update(), pickers, pickers, no_diff
    hl_arg = None if hl == "none" else hl
    shown: dict[str, Any] = {"highlight": hl_arg, "focus": focus or None, "names": bool(names)}
    diff: list[dict[str, Any]] = []
    provisional: list[bool] = []  # a quick PCA picture shown until the projection lands
    waiting: list[int] = []  # rows not in that picture yet: their vectors are being encoded

    def build() -> Any:
        if not comparing:
            one = svc.get_map(maps, p, method=meth)
            provisional.append(one.provisional)
            waiting.append(one.waiting)
            if one.provisional and _TICK.get():
                return None  # the timer keeps the quick picture on screen: nothing to draw
            return svc.map_figure(one, **shown, figure_px=figure_px, top=TOP_PX, zoom=box)
        left = svc.get_map(maps, p, method=meth, version=version_selector(left_choice))
        right = svc.get_map(maps, p, method=meth, version=version_selector(right_choice))
        provisional.append(left.provisional or right.provisional)
        if provisional[-1] and _TICK.get():
            return None
        diff.extend(svc.map_diff(left, right))
        return svc.compare_figure(left, right, **shown, figure_px=figure_px)

    fig, err = attempt(build)
    intents, names_err = attempt(lambda: data_svc.intent_names(maps.db, p))
    choices = gr.update(choices=intents or [])
    history, history_err = attempt(lambda: version_svc.history(maps.db, p))
    err = err or names_err or history_err
    versions = [BASE_CHOICE, ACTIVE_CHOICE, *(f"v{r['version']}" for r in history or [])]
    pickers = gr.update(choices=versions, visible=comparing)
    if fig is None and not err and any(provisional):  # a tick of the timer, still waiting
        kept = gr.update()
        return kept, kept, gr.update(active=True), choices, choices, pickers, pickers, kept
    if err or fig is None:
        stop = gr.update(active=False)
        return None, problem(err or ""), stop, choices, choices, pickers, pickers, no_diff
    meta = dict(fig.layout.meta or {})
    n = meta.get("n_points", 0)
    n = n[0] if isinstance(n, list) else n  # side by side: the same points in both
    rows = meta.get("n_rows", n)
    what = meth if comparing else fig.layout.title.text  # in the status line, not a title
    # the page sizes the figure to the screen (style.css); the names were placed for this size
    meta["placed_for"] = size or ""
    meta["zoom"] = "" if comparing or box is None else zoom
    fig.update_layout(height=None, meta=meta, **({} if comparing else {"title": None}))
    status = f"{rows} utterances · {what}"
    if any(provisional):
        status = f"{rows} utterances · a quick PCA picture while the {meth} map is computed…"
    if meta.get("others"):
        others_drawn, others = meta["others"]
        status += f" · {drawn_words(n, others_drawn, others, comparing)}"
    if sum(waiting):
        status += f" ({sum(waiting)} more are being encoded for it)"
    status += hidden_names(meta, fig.layout.annotations, comparing)
    if diff:
        status += " · at the bottom: how each intent moved, measured in the encoders' spaces"
    poll = gr.update(active=any(provisional))
    return fig, status, poll, choices, choices, pickers, pickers, diff_frame(diff)


# Set while the Map's timer asks for the map (:func:`_for_the_timer`): a map still waiting for its
# projection is not drawn again.
_TICK: contextvars.ContextVar[bool] = contextvars.ContextVar("map_timer_tick", default=False)


def _for_the_timer(draw: Callable[P, tuple[Any, ...]]) -> Callable[P, tuple[Any, ...]]:
    """``draw`` as the timer calls it, with ``draw``'s parameters (Gradio reads them from its
    signature): the map's query is written once, in :func:`render`."""

    @functools.wraps(draw, assigned=("__module__", "__annotations__"))
    def poll_render(*args: P.args, **kwargs: P.kwargs) -> tuple[Any, ...]:
        """The timer's :func:`render`: the plot is redrawn (and a lasso in progress lost) only
        once the projection asked for has replaced the quick picture, not at every tick; until
        then no figure is built (its names placed for nothing: seconds of CPU a minute on a
        300-intent map)."""
        token = _TICK.set(True)
        try:
            out = draw(*args, **kwargs)
        finally:
            _TICK.reset(token)
        waiting = isinstance(out[2], dict) and out[2].get("active")
        return (gr.update(), gr.update(), *out[2:]) if waiting else out

    return poll_render


poll_render = _for_the_timer(render)
