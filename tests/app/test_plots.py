from __future__ import annotations

import numpy as np
import pytest

from app.plots import (
    MapData,
    confusion_heatmap,
    f1_bars,
    highlight_mask,
    intent_colours,
    scatter_map,
    side_by_side,
    worst_pairs,
)

IDS = [10, 11, 12, 13, 14]
TEXTS = ["where is my card", "top up failed", "<b>bold</b> & co", "rate?", "hello"]
GOLD: list[str | list[str] | None] = [
    "card_arrival",
    "top_up_failed",
    ["exchange_rate", "card_arrival"],
    "exchange_rate",
    None,
]
PRED = ["card_arrival", "card_arrival", "exchange_rate", "exchange_rate", "top_up_failed"]
SPLITS = ["train", "test", "train", "test", "unlabelled"]
MARGINS = [0.3, 0.01, 0.2, 0.04, 0.5]
POINTS = np.arange(10, dtype=np.float32).reshape(5, 2)


def _map(points: np.ndarray = POINTS) -> MapData:
    return MapData(points, IDS, TEXTS, GOLD, PRED, SPLITS, MARGINS)


def _marker_colours(fig) -> dict[str, str]:
    return {str(t.name): t.marker.color for t in fig.data}


def test_every_point_carries_its_id_and_intent_colour() -> None:
    fig = scatter_map(POINTS, IDS, TEXTS, GOLD, PRED, SPLITS)
    assert sorted(int(i) for t in fig.data for i in t.customdata) == IDS
    assert [t.name for t in fig.data] == [
        "(unlabelled)",
        "card_arrival",
        "exchange_rate",
        "top_up_failed",
    ]
    assert fig.layout.meta["n_points"] == 5
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["exchange_rate"].customdata) == [12, 13]
    assert list(by_name["exchange_rate"].marker.symbol) == ["circle", "diamond"]
    assert list(by_name["(unlabelled)"].marker.symbol) == ["x"]
    assert by_name["(unlabelled)"].marker.color == "#b0b0b0"
    assert fig.data[0].type == "scatter"
    assert (
        scatter_map(POINTS, IDS, TEXTS, GOLD, PRED, SPLITS, webgl=True).data[0].type == "scattergl"
    )


def test_colours_are_stable_across_views_and_distinct_for_hundreds_of_intents() -> None:
    palette = intent_colours(["card_arrival", "exchange_rate", "top_up_failed"])
    a = _marker_colours(scatter_map(POINTS, IDS, TEXTS, GOLD, PRED, SPLITS, colours=palette))
    b = _marker_colours(
        scatter_map(POINTS[:2], IDS[:2], TEXTS[:2], GOLD[:2], PRED[:2], SPLITS[:2], colours=palette)
    )
    assert a["card_arrival"] == b["card_arrival"] == palette["card_arrival"]
    assert a["top_up_failed"] == b["top_up_failed"] != a["card_arrival"]
    f1 = f1_bars({"card_arrival": 0.5, "top_up_failed": 0.9}, colours=palette)
    assert list(f1.data[0].marker.color) == [a["card_arrival"], a["top_up_failed"]]
    many = intent_colours([f"intent_{i}" for i in range(256)])
    assert len(set(many.values())) == 257  # 256 intents + the grey of unlabelled points


def _drawn_names(fig, plot_px) -> tuple[list[tuple[str, np.ndarray, np.ndarray | None]], dict]:
    """Each intent name as drawn on a plot of ``plot_px``: its text, its box (px: x0, y0, x1, y1,
    from the same width estimate the placing used) and its line (px: from the centre to the
    name's middle, None without one); and every centre (px) it was kept near."""
    from app.plots.labels import _LINE_PX, _PAD_PX, text_px

    (x0, x1), (y0, y1) = fig.layout.xaxis.range, fig.layout.yaxis.range

    def px(x: float, y: float) -> np.ndarray:
        return np.array([(x - x0) / (x1 - x0) * plot_px[0], (y1 - y) / (y1 - y0) * plot_px[1]])

    out = []
    for a in fig.layout.annotations:
        if a.name != "intent name":
            continue
        centre = px(a.x, a.y)
        dx, dy = (a.ax, a.ay) if a.showarrow else (a.xshift or 0, -(a.yshift or 0))
        mid = centre + np.array([dx, dy])
        w, h = text_px(a.text) / 2, (_LINE_PX + 2 * _PAD_PX) / 2
        box = np.array([mid[0] - w, mid[1] - h, mid[0] + w, mid[1] + h])
        out.append((a.text, box, np.array([*centre, *mid]) if a.showarrow else None))
    centres = {k: px(*v) for k, v in fig.layout.meta["centres"].items()}
    return out, centres


def _keeps_the_rules(fig, plot_px) -> None:
    """The placing's rules (app.plots.labels), as drawn: inside the plot, apart, nearer its own
    centre than any other and a line of at most MAX_LEADER_PX, for any text a browser draws
    inside the box kept free for it (TEXT_MIN to TEXT_MAX), a line through no other name."""
    from app.plots.label_geometry import box_distance, crosses, half_size, line_length, shrunk
    from app.plots.labels import MAX_LEADER_PX, TEXT_MAX, TEXT_MIN

    names, centres = _drawn_names(fig, plot_px)
    boxes = np.array([b for _, b, _ in names])
    for i, (text, box, line) in enumerate(names):
        assert box[0] >= -0.5 and box[1] >= -0.5, text
        assert box[2] <= plot_px[0] + 0.5 and box[3] <= plot_px[1] + 0.5, text
        others = np.delete(boxes, i, axis=0)
        apart = (box[2] <= others[:, 0]) | (others[:, 2] <= box[0])
        apart |= (box[3] <= others[:, 1]) | (others[:, 3] <= box[1])
        assert apart.all(), text
        least, most = shrunk(box[None, :], *TEXT_MIN), shrunk(box[None, :], *TEXT_MAX)
        own = box_distance(least, *centres[text])[0]
        nearest = min(box_distance(most, *c)[0] for k, c in centres.items() if k != text)
        assert own < nearest, (text, own, nearest)
        if line is not None:  # as long as a browser draws it, to the text's edge
            iw, ih = half_size(least)
            (drawn,) = line_length(line[0], line[1], line[2:3], line[3:4], iw, ih)
            assert 0 < drawn <= MAX_LEADER_PX + 0.5, (text, drawn)
            assert not crosses(line[None, :], others).any(), text


def test_names_sit_at_their_clusters_and_a_crowded_centre_says_how_many_are_hidden() -> None:
    """Issue 65 item 3 (issue 58 item 2 before it): every name an annotation over the points,
    with a halo; none overlapping another, each inside the plot; each nearer its own intent's
    centre than any other's, on its points or at most a short line away, a line through no
    other name. Where the clusters are apart, every intent is named on its points; where 60
    intents pile up in one blob, the names that fit are drawn and the figure says which are
    not. For a bigger plot the lines do not grow: a name's offset is in pixels."""
    from app.plots.labels import HALO, MAX_LEADER_PX, PLOT_PX

    rng = np.random.default_rng(0)
    n = 600
    gold = [f"intent_{i % 60}" for i in range(n)]
    grid = np.array([[(i % 60) % 6 * 40.0, (i % 60) // 6 * 10.0] for i in range(n)])
    points = grid + rng.normal(scale=0.5, size=(n, 2))  # 60 clusters, far apart
    blob = rng.normal(size=(n, 2))  # 60 intents piled up in one blob
    big = (1376.0, 620.0)  # the plot at 1440x900
    for where, size in ((points, None), (blob, None), (blob, (1396.0, 700.0))):
        fig = scatter_map(
            where, list(range(n)), ["t"] * n, gold, gold, ["train"] * n, webgl=True, figure_px=size
        )
        plot = PLOT_PX if size is None else big
        assert fig.layout.showlegend is False  # 60 entries would scroll: the names are on the map
        names = [a for a in fig.layout.annotations if a.name == "intent name"]
        hidden = fig.layout.meta["names_hidden"]
        assert sorted([*(a.text for a in names), *hidden]) == sorted(set(gold))  # each, once
        assert all(a.font.shadow == HALO and a.font.size >= 12 for a in names)
        assert all(a.axref == "pixel" and a.ayref == "pixel" for a in names if a.showarrow)
        _keeps_the_rules(fig, plot)
    near = scatter_map(points, list(range(n)), ["t"] * n, gold, gold, ["train"] * n)
    assert not near.layout.meta["names_hidden"]  # apart: every intent named,
    assert not any(a.showarrow for a in near.layout.annotations)  # on its points
    crowded = scatter_map(blob, list(range(n)), ["t"] * n, gold, gold, ["train"] * n)
    assert 0 < len(crowded.layout.meta["names_hidden"]) < 60  # the blob: those that fit
    lines = [np.hypot(a.ax, a.ay) for a in crowded.layout.annotations if a.showarrow]
    assert all(length <= MAX_LEADER_PX + 40 for length in lines)  # short, at any plot size
    focused = scatter_map(
        blob, list(range(n)), ["t"] * n, gold, gold, ["train"] * n, focus=["intent_3"]
    )
    colours = {t.name: t.marker.color for t in focused.data if t.mode == "markers"}
    assert colours["intent_3"] != "#d9d9d9"
    assert {c for k, c in colours.items() if k != "intent_3"} == {"#d9d9d9"}
    assert [a.text for a in focused.layout.annotations if a.name == "intent name"] == ["intent_3"]


def test_300_intents_scattered_over_the_map_keep_every_rule() -> None:
    """The placing compares a place only with the centres, names and lines near it (a 300-intent
    map took 2 s a placing when it compared all): blobs of 5-40 points scattered as UMAP
    scatters them, some apart, some touching, every name drawn keeps every rule."""
    from app.plots.labels import PLOT_PX

    rng = np.random.default_rng(300)
    sizes = rng.integers(5, 41, size=300)
    centres = rng.uniform(0, 10, size=(300, 2))
    blobs = [c + rng.normal(0, 0.25, size=(k, 2)) for c, k in zip(centres, sizes, strict=True)]
    points = np.concatenate(blobs)
    gold = [f"intent_{i}" for i, k in enumerate(sizes) for _ in range(k)]
    n = len(gold)
    fig = scatter_map(points, list(range(n)), ["t"] * n, gold, gold, ["train"] * n, webgl=True)
    names = [a.text for a in fig.layout.annotations if a.name == "intent name"]
    assert len(names) > 50 and fig.layout.meta["names_hidden"]  # crowded in places, not all
    _keeps_the_rules(fig, PLOT_PX)


def test_hover_is_escaped() -> None:
    fig = scatter_map(POINTS, IDS, TEXTS, GOLD, PRED, SPLITS, margins=MARGINS)
    hover = " ".join(h for t in fig.data for h in t.hovertext)
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; co" in hover
    assert "<b>bold</b>" not in hover
    assert "gold: exchange_rate, card_arrival" in hover
    assert "margin: 0.010" in hover


def test_highlight_modes() -> None:
    assert highlight_mask(GOLD, PRED, "misclassified").tolist() == [
        False, True, False, False, False,
    ]  # fmt: skip
    assert highlight_mask(GOLD, PRED, "unlabelled").tolist() == [False] * 4 + [True]
    assert highlight_mask(GOLD, PRED, "low_margin", margins=MARGINS).sum() == 2
    with pytest.raises(ValueError, match="needs margins"):
        highlight_mask(GOLD, PRED, "low_margin")
    with pytest.raises(ValueError, match="Unknown highlight"):
        highlight_mask(GOLD, PRED, "sparkly")
    fig = scatter_map(POINTS, IDS, TEXTS, GOLD, PRED, SPLITS, highlight="misclassified")
    assert fig.layout.meta["n_highlighted"] == 1
    top_up = next(t for t in fig.data if t.name == "top_up_failed")
    card = next(t for t in fig.data if t.name == "card_arrival")
    assert top_up.marker.opacity[0] > 0.9 and card.marker.opacity[0] < 0.2


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="texts has 2 entries"):
        scatter_map(POINTS, IDS, TEXTS[:2], GOLD, PRED, SPLITS)


def test_side_by_side_aligns_and_shares_legend() -> None:
    rot = np.array([[0.0, -1.0], [1.0, 0.0]], dtype=np.float32)
    fig = side_by_side(
        _map(),
        _map(POINTS @ rot * 3 + 7),
        ("frozen", "v2 <new>"),
        {"silhouette": 0.07, "alignment": 1.2, "uniformity": -2.5},
        {"silhouette": 0.7, "alignment": 0.4, "uniformity": -3.1},
    )
    assert len(fig.data) == 8
    names_in_legend = [t.name for t in fig.data if t.showlegend]
    assert len(names_in_legend) == len(set(names_in_legend)) == 4
    titles = [a.text for a in fig.layout.annotations]
    assert "silhouette 0.07" in titles[0] and "silhouette 0.70" in titles[1]
    assert "v2 &lt;new&gt;" in titles[1]
    left = {
        int(i): (x, y) for t in fig.data[:4] for i, x, y in zip(t.customdata, t.x, t.y, strict=True)
    }
    right = {
        int(i): (x, y) for t in fig.data[4:] for i, x, y in zip(t.customdata, t.x, t.y, strict=True)
    }
    assert left.keys() == right.keys() == set(IDS)
    for i in IDS:
        np.testing.assert_allclose(left[i], right[i], atol=1e-4)


def test_confusion_heatmap_and_worst_pairs() -> None:
    labels = ["a", "b", "c"]
    matrix = [[5, 2, 0], [3, 4, 0], [0, 1, 6]]
    fig = confusion_heatmap(labels, matrix)
    assert list(fig.data[0].customdata[1][0]) == ["b", "a"]  # row = gold, column = predicted
    assert fig.data[0].z[1][0] == 3
    assert worst_pairs(labels, matrix) == [("b", "a", 3), ("a", "b", 2), ("c", "b", 1)]
    assert worst_pairs(labels, matrix, top=1) == [("b", "a", 3)]
    with pytest.raises(ValueError, match="3x3"):
        confusion_heatmap(labels, [[1, 2], [3, 4]])


def test_f1_bars_worst_first() -> None:
    fig = f1_bars({"b": 0.9, "a": 0.2, "c": 0.5})
    assert list(fig.data[0].y) == ["a", "c", "b"]
    assert list(fig.data[0].customdata) == ["a", "c", "b"]


HOSTILE = (
    '<a href="https://evil.example/sign-in">Sign in again</a><span style="font-size:90px">X</span>'
)


def _drawn(fig) -> str:
    """What a figure draws as text (everything but the values a click reads back)."""
    import json

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("customdata", "legendgroup")}
        if isinstance(value, list | tuple):
            return [strip(v) for v in value]
        return value

    return json.dumps(strip(fig.to_plotly_json()), default=str)


def test_intent_names_are_plain_text_in_every_figure() -> None:
    """Issue 56, row 3: an intent named as HTML was a link and 90 px text over the Map (Plotly
    draws legends, ticks, labels and hover as a subset of HTML). Every figure draws names
    escaped, so they show as typed; a click still reads the name as stored."""
    from app.plots.team import agreement_chart

    gold = [HOSTILE, "top_up_failed", HOSTILE, "exchange_rate", None]
    pred = [HOSTILE, HOSTILE, "exchange_rate", "exchange_rate", "top_up_failed"]
    m = MapData(POINTS, IDS, TEXTS, gold, pred, SPLITS, MARGINS)
    names = [HOSTILE, "exchange_rate"]
    figures = {
        "map with legend": scatter_map(POINTS, IDS, TEXTS, gold, pred, SPLITS, names=False),
        "map with names": scatter_map(POINTS, IDS, TEXTS, gold, pred, SPLITS, names=True),
        "compare": side_by_side(m, m, ("before", "after"), names=True),
        "f1": f1_bars({HOSTILE: 0.4, "exchange_rate": 0.9}),
        "confusion": confusion_heatmap(names, [[3, 1], [0, 4]]),
        "agreement": agreement_chart(
            [("dana – vic", "κ", 0.5, 10, 8)], [(HOSTILE, "κ", 0.2, 5, 3)]
        ),
    }
    for what, fig in figures.items():
        drawn = _drawn(fig)
        assert "<a href" not in drawn and "<span" not in drawn, what
        assert "&lt;a href" in drawn, what
    heat = figures["confusion"].data[0]
    assert list(heat.customdata[0][0]) == [HOSTILE, HOSTILE]  # a click reads the stored name
    assert list(figures["f1"].data[0].customdata) == [HOSTILE, "exchange_rate"]


def test_a_map_drawn_again_the_same_way_places_its_names_once(monkeypatch) -> None:
    """The Map's timer redraws the map every second while a projection runs, and a page's size
    or zoom asks for it again: the same map, axes, plot and focus are placed once; another plot
    size, focus or point is placed anew."""
    from app.plots import labels

    placings: list[tuple[float, float]] = []
    real = labels.place_names

    def counted(named, pts, xr, yr, plot_px=labels.PLOT_PX, shown=None):
        placings.append(plot_px)
        return real(named, pts, xr, yr, plot_px, shown)

    monkeypatch.setattr(labels, "place_names", counted)
    rng = np.random.default_rng(7)
    points = rng.normal(size=(40, 2))
    gold = [f"intent_{i % 4}" for i in range(40)]
    m = MapData(points, list(range(40)), ["t"] * 40, gold, gold, ["train"] * 40)
    first = labels.map_names(m, labels.ranges(m))
    again = labels.map_names(m, labels.ranges(m))
    assert again.annotations == first.annotations and len(placings) == 1
    labels.map_names(m, labels.ranges(m), plot_px=(900.0, 400.0))
    labels.map_names(m, labels.ranges(m), focus=["intent_2"])
    moved = MapData(points + 0.5, list(range(40)), ["t"] * 40, gold, gold, ["train"] * 40)
    labels.map_names(moved, labels.ranges(moved))
    assert len(placings) == 4
