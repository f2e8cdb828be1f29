"""The Team tab draws the agreement (issue 47, item 9): Cohen's κ per pair of annotators and the
agreement per intent, lowest first, beside the tables; nothing is drawn before an item has two
answers."""

from __future__ import annotations

import pytest

from app.plots.team import INTENTS_SHOWN, agreement_chart, band
from app.services.labelling import team, team_answers
from app.ui import team_tab
from tests.app.test_team_labelling import INTENTS, P, as_, people  # noqa: F401 (a fixture)
from tests.handles import live


def test_the_agreement_is_drawn_per_pair_and_per_intent_once_items_have_two_answers(
    ctx,
    people,  # noqa: F811 (the fixture imported above)
):
    team.assign(ctx.db, live(ctx, P), ["ana", "ben"], overlap=0.2)
    before = team_tab.show(ctx.db, live(ctx, P))
    assert before[2]["visible"] is False and before[2]["value"] is None
    ana, ben = people["ana"], people["ben"]
    both = sorted(
        set(team.open_items(ctx.db, as_(ctx, ana))) & set(team.open_items(ctx.db, as_(ctx, ben)))
    )
    for i, uid in enumerate(both):
        said = INTENTS[i % 4]
        team.submit(ctx.db, as_(ctx, ana), uid, "label", [said])
        other = "card_linking" if i in (1, 4, 7, 10, 13) and said != "card_linking" else said
        team.submit(ctx.db, as_(ctx, ben), uid, "label", [other])
    found = team_answers.measure(ctx.db, live(ctx, P))
    drawn = team_tab.show(ctx.db, live(ctx, P))[2]
    assert drawn["visible"] is True
    pairs, intents = drawn["value"].data
    (pair,) = found.pairs
    assert list(pairs.y) == ["ana – ben"] and list(pairs.x) == [pytest.approx(pair.kappa)]
    assert pairs.marker.color[0] == band(pair.kappa)[1]
    assert f"κ {pair.kappa:.2f} · 20 items" in pairs.text[0]
    # every intent measured, lowest agreement first: card_linking is in every disagreement
    assert list(intents.y) == [r.intent for r in found.intents]
    assert intents.y[0] == "card_linking" and list(intents.x) == sorted(intents.x)
    assert list(intents.x) == [pytest.approx(r.value) for r in found.intents]


def test_an_agreement_that_cannot_be_computed_says_why_on_its_row():
    """Issue 58 item 3: 23 intents had no bar and nothing said why: everyone had given the same
    answer on each of their items, which leaves κ undefined (no chance agreement to correct
    for), and the row read "too few". Full agreement is drawn as such; too few items say so."""
    fig = agreement_chart(
        [("a – b", "κ", None, 1, 1), ("a – c", "κ", 0.9, 30, 29), ("b – c", "κ", None, 6, 6)],
        [(f"intent{i:02d}", "κ", i / 40, 5, 4) for i in range(20)]
        + [("card_arrival", "κ", None, 4, 4), ("rare", "α", None, 1, 1)]
        + [(f"intent{i:02d}", "κ", i / 40, 5, 4) for i in range(20, 40)],
    )
    pairs, intents = fig.data
    assert list(pairs.x) == [0.0, 0.9, 1.0]
    assert list(pairs.text) == [
        "1 item: too few for κ",
        "κ 0.90 · 30 items",
        "all 6 items agree (κ needs a disagreement)",
    ]
    assert pairs.marker.color[1] == band(0.9)[1] == "#1a9850"
    assert list(pairs.marker.pattern.shape) == ["", "", "/"]
    assert list(pairs.textposition) == ["outside", "auto", "inside"]
    assert len(intents.y) == INTENTS_SHOWN and intents.y[0] == "intent00"
    at = list(intents.y).index("card_arrival")
    assert intents.x[at] == 1.0 and intents.text[at] == "all 4 items agree (κ needs a disagreement)"
    assert intents.text[at + 1] == "1 item: too few for α" and intents.x[at + 1] == 0.0
    assert "lowest 25 of 42" in fig.layout.annotations[1].text
    assert "everyone gave the same answer on every item" in fig.layout.annotations[2].text
