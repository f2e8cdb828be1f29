"""The Team tab's agreement chart: Cohen's κ of each pair of annotators beside the agreement on
each intent (κ, or α for a multi-label intent), lowest first, so the pair and the intents that
need a talk stand out before the tables are read.

Each bar is coloured by Landis and Koch's bands (below 0.2 slight, 0.4 fair, 0.6 moderate, 0.8
substantial, above: almost perfect). A value that cannot be computed says why, beside its row:
where every answer was the same (everyone agreed on every item: κ has no chance agreement to
correct for) a grey striped bar reaches 1, "all N agree"; where too few items were answered by
both there is no bar, and the row says so.

Every row says its value in words at :data:`TEXT_PX` (a text trace per panel, not the bars' own
text, which Plotly shrank to fit a short bar, to about 7 px, and hid in a bar of κ = 0.00, the
rows a reviewer most needs: issue 65): beside the bar's end, or beside 0 for a bar that is
short or negative, and inside the end of a long bar, with a white halo that reads over any
colour.

Example:
    >>> fig = agreement_chart([("ann – bob", "κ", 0.62, 40, 30)], [("card_arrival", "κ", 0.3, 12, 7)])
    >>> [(t.type, list(t.y)) for t in fig.data]
    [('bar', ['ann – bob']), ('scatter', ['ann – bob']), ('bar', ['card_arrival']), ('scatter', ['card_arrival'])]
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
TEXT_PX = 12  # each row's value in words
INSIDE_FROM = 0.6  # a bar this long holds its text (at its end); a shorter one has it beside
HALO = ", ".join(f"{x}px {y}px 1px #fff" for x, y in ((1, 0), (-1, 0), (0, 1), (0, -1)))
_GAP = "\u2002"  # an en space between a bar's end and the text beside it


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


# (label, "κ" or "α", the value or None, items, items with the same answer from everyone)
Row = tuple[str, str, float | None, int, int]
UNANIMOUS = "#c8c8c8"  # a bar for "everyone agreed": κ undefined, so no band's colour


def unanimous(value: float | None, items: int, agreed: int) -> bool:
    """Whether an undefined agreement is everyone giving the same answer on every item (2 or
    more): full agreement, with no chance agreement for κ or α to correct for."""
    return value is None and items >= 2 and agreed == items


def said(stat: str, value: float | None, items: int, agreed: int) -> str:
    """A row's agreement in words, the reason included where it cannot be computed.

    Example:
        >>> said("κ", 0.456, 12, 9), said("κ", None, 4, 4), said("α", None, 1, 1)
        ('κ 0.46 · 12 items', 'all 4 items agree (κ needs a disagreement)', '1 item: too few for α')
    """
    if value is not None:
        return f"{stat} {value:.2f} · {items} items"
    if unanimous(value, items, agreed):
        return f"all {items} items agree ({stat} needs a disagreement)"
    return f"{items} item{'s' if items != 1 else ''}: too few for {stat}"


def _bars(rows: Sequence[Row]) -> go.Bar:
    """One horizontal bar per row; where the value is undefined, a grey striped bar to 1 when
    everyone agreed, else none. Its words are :func:`_words`' (the bar keeps them for hover)."""
    x, colour, stripe, what = [], [], [], []
    for _, _, v, n, same in rows:
        full = unanimous(v, n, same)
        x.append(1.0 if full else 0.0 if v is None else float(v))
        colour.append(UNANIMOUS if v is None else band(v)[1])
        stripe.append("/" if full else "")
        what.append("all agree" if full else "–" if v is None else band(v)[0])
    return go.Bar(
        x=x,
        y=[plain(label) for label, *_ in rows],
        orientation="h",
        marker={"color": colour, "pattern": {"shape": stripe, "fgcolor": "#888888"}},
        text=[said(stat, v, n, same) for _, stat, v, n, same in rows],
        textposition="none",
        customdata=what,
        hovertemplate="%{y}: %{text} (%{customdata})<extra></extra>",
        showlegend=False,
    )


def _words(rows: Sequence[Row]) -> go.Scatter:
    """Each row's value in words, at :data:`TEXT_PX` whatever its bar's length: inside the end
    of a long bar (from :data:`INSIDE_FROM`) or in the middle of an all-agree bar; beside the
    end of a short one, or beside 0 for a bar of 0, a negative one or none."""
    x, where, text = [], [], []
    for _, stat, v, n, same in rows:
        words = said(stat, v, n, same)
        if unanimous(v, n, same):
            x.append(0.5)
            where.append("middle center")
            text.append(words)
        elif v is not None and v >= INSIDE_FROM:
            x.append(float(v))
            where.append("middle left")
            text.append(words + _GAP)
        else:
            x.append(max(0.0, float(v or 0.0)))
            where.append("middle right")
            text.append(_GAP + words)
    return go.Scatter(
        x=x,
        y=[plain(label) for label, *_ in rows],
        mode="text",
        text=text,
        textposition=where,
        textfont={"size": TEXT_PX, "color": "#1f2937", "shadow": HALO},
        hoverinfo="skip",
        cliponaxis=False,
        showlegend=False,
    )


def agreement_chart(pairs: Sequence[Row], intents: Sequence[Row]) -> go.Figure:
    """κ per pair (``(pair, "κ", κ, items, agreed)``) beside agreement per intent (``(intent,
    "κ" or "α", value, items, agreed)``, in the order given: lowest first, as
    :attr:`core.labelling.agreement.Agreement.intents`; the first :data:`INTENTS_SHOWN` drawn).
    ``agreed``: the items on which everyone gave the same answer."""
    shown = list(intents[:INTENTS_SHOWN])
    more = f" (lowest {len(shown)} of {len(intents)})" if len(intents) > len(shown) else ""
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.4, 0.6],
        horizontal_spacing=0.22,
        subplot_titles=("Cohen's κ per pair", f"Agreement per intent{more}"),
    )
    for col, rows in ((1, pairs), (2, shown)):
        fig.add_trace(_bars(rows), row=1, col=col)
        fig.add_trace(_words(rows), row=1, col=col)
    lowest = min([0.0, *(v for _, _, v, *_ in [*pairs, *shown] if v is not None)])
    fig.update_xaxes(range=[lowest, 1.0], zeroline=True, title_text="agreement")
    fig.update_yaxes(autorange="reversed", automargin=True)
    if any(v is None for _, _, v, *_ in [*pairs, *shown]):
        fig.add_annotation(
            text="Grey, striped: everyone gave the same answer on every item. That is full "
            "agreement, which κ and α cannot score:<br>they correct for chance agreement, and "
            "there is no disagreement to compare with. No bar: too few items answered by two.",
            xref="paper",
            yref="paper",
            x=0,
            y=0,
            yshift=-50,
            xanchor="left",
            yanchor="top",
            showarrow=False,
            align="left",
            font={"size": 12, "color": "#555555"},
        )
    fig.update_layout(
        height=max(220, 70 + 20 * max(len(pairs), len(shown))) + 56,
        margin={"l": 10, "r": 10, "t": 40, "b": 96},
        template="plotly_white",
        bargap=0.25,
    )
    return fig
