"""The Team tab draws the agreement (issue 47, item 9: it was a table only): Cohen's κ of each
pair of annotators and the agreement on each intent, lowest first, at 1440x900 and 1280x720.

A project of its own (imported while the server runs, so the folder's other modules keep the
demo project as they expect it): the admin and dana each answer its 16 unlabelled questions,
dana differing on 3 of the first 12 and both giving the last 4 the same intent, written through
the app's services as their Label tabs would.

Issue 58 item 3: 23 intents had no bar and nothing said why. An intent everyone agreed on has
no κ (nothing to correct for chance): its row says that all its items agree.

Issue 65 item 4: a row of κ = 0.00 showed no bar and no text, and the text inside short bars was
about 7 px. ZERO_KAPPA is given by the admin on both of its questions and by dana on one: its κ
is 0.00. Every row says its value, at 11 px or more, inside the chart's plot area."""

from __future__ import annotations

import csv

import pytest

from tests.e2e.conftest import cli, shot
from tests.e2e.team.test_roles import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = "agreement"
INTENTS = ["card_arrival", "exchange_rate", "top_up_failed"]
DIFFER = (1, 5, 9)  # the questions dana answers differently
AGREED = "lost_or_stolen_card"  # the last UNANIMOUS questions: both give it
UNANIMOUS = 4
ZERO_KAPPA = "pin_blocked"  # the admin gives it twice, dana once (then card_arrival): κ 0.00


@pytest.fixture(scope="module")
def answered(team_server, tmp_path_factory):
    """The project, both annotators' answers, and their κ (by scikit-learn)."""
    from dataclasses import replace

    from sklearn.metrics import cohen_kappa_score

    from app.access.auth import actor
    from app.config import load_settings
    from app.services.labelling import team
    from app.serving.state import ServingState
    from tests.handles import live

    src = tmp_path_factory.mktemp("agreement") / "rows.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        for i in range(12):
            w.writerow([f"example {i} of {INTENTS[i % 3]}", INTENTS[i % 3], "train"])
            w.writerow([f"question number {i}", "", "unlabelled"])
        w.writerow([f"example of {AGREED}", AGREED, "train"])
        w.writerow([f"example of {ZERO_KAPPA}", ZERO_KAPPA, "train"])
        for i in range(12, 12 + UNANIMOUS + 2):
            w.writerow([f"question number {i}", "", "unlabelled"])
    cli(team_server.data_dir, "import", str(src), "--project", PROJECT)
    cli(team_server.data_dir, "members", "add", "dana", "--project", PROJECT)
    # the server's users, as its multi-user settings name them
    serving_state = ServingState.open(replace(load_settings(team_server.data_dir), multi_user=True))
    team.assign(serving_state.db, live(serving_state, PROJECT), ["admin", "dana"], overlap=1.0)
    said: dict[str, list[str]] = {"admin": [], "dana": []}
    admin, dana = actor(serving_state.db, True, "admin"), actor(serving_state.db, True, "dana")
    for i, uid in enumerate(
        sorted(team.open_items(serving_state.db, live(serving_state, PROJECT, admin)))
    ):
        mine = INTENTS[i % 3] if i < 12 else AGREED if i < 12 + UNANIMOUS else ZERO_KAPPA
        theirs = INTENTS[(i + 1) % 3] if i in DIFFER else mine
        if i == 12 + UNANIMOUS + 1:
            theirs = INTENTS[0]
        team.submit(serving_state.db, live(serving_state, PROJECT, admin), uid, "label", [mine])
        team.submit(serving_state.db, live(serving_state, PROJECT, dana), uid, "label", [theirs])
        said["admin"].append(mine)
        said["dana"].append(theirs)
    return cohen_kappa_score(said["admin"], said["dana"])


# Each row's words as drawn: the text, its font size and box, and the row it is on (the text
# trace's y); each plot area's left and right edges, left panel first.
WORDS = """() => {
  const gd = document.querySelector('#team-agreement-chart .js-plotly-plot');
  const texts = [];
  gd.querySelectorAll('.scatterlayer .trace').forEach((trace) => {
    const data = trace.__data__ && trace.__data__[0] && trace.__data__[0].trace;
    trace.querySelectorAll('.textpoint text').forEach((t, i) => {
      const r = t.getBoundingClientRect();
      texts.push({row: data ? data.y[i] : null, text: t.textContent,
                  size: parseFloat(getComputedStyle(t).fontSize), box: [r.left, r.top, r.right, r.bottom]});
    });
  });
  const areas = [...gd.querySelectorAll('.nsewdrag')].map((d) => d.getBoundingClientRect())
    .sort((a, b) => a.left - b.left).map((a) => [a.left, a.right]);
  return {texts, areas};
}"""


def test_the_team_tab_draws_kappa_per_pair_and_per_intent(team_server, browser, answered):
    for width, height in ((1440, 900), (1280, 720)):
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.set_default_timeout(60_000)
        try:
            sign_in(page, team_server.url, "admin")
            picker = page.locator("#project input")
            picker.click()
            picker.fill(PROJECT)
            page.get_by_role("option", name=PROJECT, exact=True).click()
            page.wait_for_function(
                "(p) => document.querySelector('#project-summary')?.innerText?.includes(p)",
                arg=PROJECT,
            )
            page.get_by_role("tab", name="Team").click()
            page.wait_for_function(
                "() => document.querySelector('#team-agreement-chart .js-plotly-plot')"
                "?.data?.filter((t) => t.type === 'bar').length === 2"
            )
            pairs, intents = page.evaluate(
                "() => document.querySelector('#team-agreement-chart .js-plotly-plot').data"
                ".filter((t) => t.type === 'bar').map((t) => ({y: t.y, x: t.x}))"
            )
            assert pairs["y"] == ["admin – dana"]
            assert pairs["x"][0] == pytest.approx(answered, abs=1e-6)
            assert sorted(intents["y"]) == sorted([*INTENTS, AGREED, ZERO_KAPPA])
            assert intents["x"][intents["y"].index(ZERO_KAPPA)] == 0.0
            # every row says its value, readable, in the plot area (κ 0.00 included)
            words = page.evaluate(WORDS)
            for panel, rows in enumerate((pairs["y"], intents["y"])):
                left, right = words["areas"][panel]
                for row in rows:
                    said = [w for w in words["texts"] if w["row"] == row]
                    assert len(said) == 1 and said[0]["size"] >= 11, (row, said)
                    x0, _, x1, _ = said[0]["box"]
                    assert left - 1 <= x0 and x1 <= right + 1, (row, said, left, right)
            zero = next(w for w in words["texts"] if w["row"] == ZERO_KAPPA)
            assert zero["text"].strip().startswith("κ 0.00"), zero
            assert intents["x"] == sorted(intents["x"])  # lowest agreement first
            # everyone agreed on every item of AGREED: a bar to 1, and its row says why there is
            # no κ, in the picture itself (the bar's text and the note under the chart)
            assert intents["x"][intents["y"].index(AGREED)] == 1.0
            drawn = page.inner_text("#team-agreement-chart")
            assert f"all {UNANIMOUS} items agree (κ needs a disagreement)" in drawn, drawn
            assert "everyone gave the same answer on every item" in drawn, drawn
            chart = page.locator("#team-agreement-chart").bounding_box()
            assert chart is not None and chart["height"] >= 150, chart
            assert not page.locator(".toast-body.error").count()
            shot(page, f"92-team-agreement-chart-{width}")
        finally:
            context.close()
