"""The Team tab's agreement chart: Cohen's κ of each pair of annotators beside the agreement on
each intent (κ, or α for a multi-label intent), lowest first, so the pair and the intents that
need a talk stand out before the tables are read.

Each bar is coloured by Landis and Koch's bands (below 0.2 slight, 0.4 fair, 0.6 moderate, 0.8
substantial, above: almost perfect); a value that cannot be computed (too few items, or one
answer only) has no bar and says so in its label.

Example:
    >>> fig = agreement_chart([("ann – bob", 0.62, 40)], [("card_arrival", "κ", 0.3, 12)])
    >>> [list(t.y) for t in fig.data]
    [['ann – bob'], ['card_arrival']]
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.plots.common import plain

# Landis & Koch (1977): the band's upper bound, its name, its colour (red to green).
BANDS = (
    (0.2, "slight", "#d73027"),
    (0.4, "fair", "#fc8d59"),
    (0.6, "moderate", "#fee08b"),
    (0.8, "substantial", "#91cf60"),
    (1.01, "almost perfect", "#1a9850"),
)
# The intents drawn (lowest agreement first): those past it agree better than every one drawn.
INTENTS_SHOWN = 25


def band(value: float) -> tuple[str, str]:
    """(name, colour) of the agreement band ``value`` falls in.

    Example:
        >>> band(-0.1), band(0.55)
        (('slight', '#d73027'), ('moderate', '#fee08b'))
    """
    for upper, name, colour in BANDS:
        if value < upper:
            return name, colour
    return BANDS[-1][1], BANDS[-1][2]


def _bars(rows: Sequence[tuple[str, str, float | None, int]]) -> go.Bar:
    """One horizontal bar per (label, statistic, value, items); None: no bar, said in the text."""
    values = [0.0 if v is None else float(v) for _, _, v, _ in rows]
    return go.Bar(
        x=values,
        y=[plain(label) for label, *_ in rows],
        orientation="h",
        marker={"color": ["#bbbbbb" if v is None else band(v)[1] for _, _, v, _ in rows]},
        text=[
            f"{stat} {v:.2f} · {n} items" if v is not None else f"– · {n} items (too few)"
            for _, stat, v, n in rows
        ],
        textposition="auto",
        customdata=[[stat, "–" if v is None else band(v)[0], n] for _, stat, v, n in rows],
        hovertemplate="%{y}: %{customdata[0]} %{x:.2f} (%{customdata[1]}) on "
        "%{customdata[2]} items<extra></extra>",
        showlegend=False,
    )


def agreement_chart(
    pairs: Sequence[tuple[str, float | None, int]],
    intents: Sequence[tuple[str, str, float | None, int]],
) -> go.Figure:
    """κ per pair (``(pair, κ, items)``) beside agreement per intent (``(intent, "κ" or "α",
    value, items)``, in the order given: lowest first, as
    :attr:`core.labelling.agreement.Agreement.intents`; the first :data:`INTENTS_SHOWN` drawn)."""
    shown = list(intents[:INTENTS_SHOWN])
    more = f" (lowest {len(shown)} of {len(intents)})" if len(intents) > len(shown) else ""
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.4, 0.6],
        horizontal_spacing=0.22,
        subplot_titles=("Cohen's κ per pair", f"Agreement per intent{more}"),
    )
    fig.add_trace(_bars([(p, "κ", k, n) for p, k, n in pairs]), row=1, col=1)
    fig.add_trace(_bars(shown), row=1, col=2)
    lowest = min([0.0, *(v for _, v, _ in pairs if v is not None)])
    lowest = min([lowest, *(v for *_, v, _ in shown if v is not None)])
    fig.update_xaxes(range=[lowest, 1.0], zeroline=True, title_text="agreement")
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_layout(
        height=max(220, 70 + 20 * max(len(pairs), len(shown))),
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
        template="plotly_white",
        bargap=0.25,
    )
    return fig
