"""The Design tab's out-of-scope section, called with plain values: the trade-off is set, turned
off and back on, and what the section shows follows the project's setting."""

from __future__ import annotations

from app.services import projects as project_svc
from app.ui.design import scope


def test_the_trade_off_is_set_turned_off_and_shown(ctx, demo):
    state, on, target = scope.describe(ctx, demo)
    assert "threshold" in state and on["value"] is True and target["value"] == 0.95
    assert "keeps 90%" in scope.apply(ctx, demo, True, 0.9)
    assert project_svc.out_of_scope(ctx, demo)["target_recall"] == 0.9
    assert "off" in scope.apply(ctx, demo, False, 0.9)
    assert project_svc.out_of_scope(ctx, demo)["target_recall"] is None
    _, on, target = scope.describe(ctx, demo)
    assert on["value"] is False and target["value"] == 0.95
    assert "Pick a project" in scope.apply(ctx, None, True, 0.9)
