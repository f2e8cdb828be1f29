"""The Team tab draws the agreement (issue 47, item 9): Cohen's κ per pair of annotators and the
agreement per intent, lowest first, beside the tables; nothing is drawn before an item has two
answers."""

from __future__ import annotations

import pytest

from app.plots.team import INTENTS_SHOWN, agreement_chart, band
from app.services.labelling import team, team_answers
from app.ui import team_tab
from app.ui.common import breakable, unbroken
from tests.app.test_team_labelling import INTENTS, P, as_, people  # noqa: F401 (a fixture)
from tests.handles import live


def test_the_agreement_is_drawn_per_pair_and_per_intent_once_items_have_two_answers(
    serving_state,
    people,  # noqa: F811 (the fixture imported above)
):
    team.assign(serving_state.db, live(serving_state, P), ["ana", "ben"], overlap=0.2)
    before = team_tab.show(serving_state.db, live(serving_state, P))
    assert before[2]["visible"] is False and before[2]["value"] is None
    ana, ben = people["ana"], people["ben"]
    both = sorted(
        set(team.open_items(serving_state.db, as_(serving_state, ana)))
        & set(team.open_items(serving_state.db, as_(serving_state, ben)))
    )
    for i, uid in enumerate(both):
        said = INTENTS[i % 4]
        team.submit(serving_state.db, as_(serving_state, ana), uid, "label", [said])
        other = "card_linking" if i in (1, 4, 7, 10, 13) and said != "card_linking" else said
        team.submit(serving_state.db, as_(serving_state, ben), uid, "label", [other])
    found = team_answers.measure(serving_state.db, live(serving_state, P))
    shown = team_tab.show(serving_state.db, live(serving_state, P))
    drawn, table = shown[2], shown[3]
    # the disagreed intents' table: a name breaks only after an underscore (seen mid-word,
    # "direct_debit_payment_not_recog / nised", in a designer's walk at 1280x720)
    assert "card&#95;<wbr>linking" in list(table["intent"])
    assert all(cell == breakable(unbroken(cell)) for cell in table["intent"])
    assert drawn["visible"] is True
    pairs, _, intents, _ = drawn["value"].data  # each panel: its bars, then their words
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
    pairs, pair_words, intents, _ = fig.data
    assert list(pairs.x) == [0.0, 0.9, 1.0]
    assert list(pairs.text) == [
        "1 item: too few for κ",
        "κ 0.90 · 30 items",
        "all 6 items agree (κ needs a disagreement)",
    ]
    assert pairs.marker.color[1] == band(0.9)[1] == "#1a9850"
    assert list(pairs.marker.pattern.shape) == ["", "", "/"]
    # the words: beside 0, inside a long bar's end, in the middle of an all-agree bar
    assert list(pair_words.textposition) == ["middle right", "middle left", "middle center"]
    assert len(intents.y) == INTENTS_SHOWN and intents.y[0] == "intent00"
    at = list(intents.y).index("card_arrival")
    assert intents.x[at] == 1.0 and intents.text[at] == "all 4 items agree (κ needs a disagreement)"
    assert intents.text[at + 1] == "1 item: too few for α" and intents.x[at + 1] == 0.0
    assert "lowest 25 of 42" in fig.layout.annotations[1].text
    assert "everyone gave the same answer on every item" in fig.layout.annotations[2].text


def test_every_row_says_its_value_readably_a_kappa_of_zero_included():
    """Issue 65, item 4: rows of κ = 0.00 showed no bar and no text (the bar's own text, in a bar
    of no width), and the text inside short bars was about 7 px (Plotly shrank it to fit). Each
    row's value is words of their own, at 12 px: beside 0 for a bar of 0 or a negative one,
    beside the end of a short bar, inside the end of a long one."""
    from app.plots.team import TEXT_PX

    fig = agreement_chart(
        [("a – b", "κ", 0.0, 12, 6)],
        [
            ("zero", "κ", 0.0, 2, 1),
            ("short", "κ", 0.1, 9, 7),
            ("negative", "κ", -0.25, 5, 2),
            ("long", "κ", 0.85, 40, 38),
        ],
    )
    bars = [t for t in fig.data if t.type == "bar"]
    words = [t for t in fig.data if t.type == "scatter"]
    assert len(bars) == len(words) == 2 and all(t.textposition == "none" for t in bars)
    pair, intents = words
    assert list(pair.x) == [0.0] and pair.text[0].strip() == "κ 0.00 · 12 items"
    assert [t.strip() for t in intents.text] == [
        "κ 0.00 · 2 items",
        "κ 0.10 · 9 items",
        "κ -0.25 · 5 items",
        "κ 0.85 · 40 items",
    ]
    assert list(intents.x) == [0.0, 0.1, 0.0, 0.85]
    assert list(intents.textposition) == ["middle right"] * 3 + ["middle left"]
    assert intents.textfont.size == pair.textfont.size == TEXT_PX >= 11
