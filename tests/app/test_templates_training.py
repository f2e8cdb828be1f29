"""TaDSE options reach a real retrain: filled templates train the encoder (and are counted), the
template loss runs, and the labelled pool is untouched; without templates the options are refused
at the door."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app import worker
from app.services import retrain_jobs as svc
from app.services import slots as slots_svc
from storage.tables import ModelVersion, TrainingJob, Utterance
from tests.samples import QUICK, make_tiny

pytestmark = pytest.mark.slow


def _count(ctx, table) -> int:
    with ctx.db.session() as s:
        return s.scalar(select(func.count()).select_from(table)) or 0


def test_template_options_without_templates_are_refused_and_nothing_is_queued(ctx) -> None:
    make_tiny(ctx)
    with pytest.raises(ValueError, match="need templates: add slot values and templates"):
        svc.request_retrain(ctx, "tiny", {**QUICK, "template_fill": 5}, enqueue=False)
    assert _count(ctx, TrainingJob) == 0


def test_a_retrain_with_template_filling_and_the_template_loss_trains_on_filled_examples(
    ctx,
) -> None:
    make_tiny(ctx)
    slots_svc.save_slot(ctx, "tiny", "amount", "10 dollars\n50 euros\nall of it")
    slots_svc.save_slot(ctx, "tiny", "item", "shoes\nthe lamp")
    slots_svc.save_templates(ctx, "tiny", "refund", "refund {amount} for {item}\nreturn {item}")
    slots_svc.save_templates(ctx, "tiny", "balance", "do I have {amount} left")
    before = _count(ctx, Utterance)
    config = {**QUICK, "template_fill": 4, "template_loss": 0.5}
    view, _ = svc.request_retrain(ctx, "tiny", config, enqueue=False)
    worker.execute_job(ctx, view.id)
    done = svc.job(ctx, view.id)
    assert done.status == "succeeded", done.log
    assert "templates: 7 filled utterance(s) added" in done.log  # 4 refund + all 3 balance
    with ctx.db.session() as s:
        mv = s.get(ModelVersion, done.model_version_id)
        assert mv is not None
        assert mv.metrics["template_filled"] == 7
        assert mv.config["template_fill"] == 4 and mv.config["template_loss"] == 0.5
    assert _count(ctx, Utterance) == before  # filled examples never join the pool
