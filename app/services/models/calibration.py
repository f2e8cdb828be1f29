"""A project's out-of-scope calibration after a retrain, in words: which one its retrains run
(the setting ``oos_calibration``: ``auto`` takes the compute budget's default for this device,
:mod:`app.serving.compute`), what calibrated the thresholds serving now, and what held-out costs here.
The CLI's ``settings``, the Data tab's Project settings and REST read it here."""

from __future__ import annotations

from app.access import ProjectHandle
from app.services.models.encoders import last_training
from app.services.models.time_words import span
from app.serving.compute import HELD_OUT_COST, ComputeBudget, process_budget
from app.serving.live import LivePools
from app.serving.oos_correction import HELD_OUT
from core.evaluation.held_out import HELD_OUT_FOLDS
from core.evaluation.version_metrics import VersionMetrics
from storage import jobs
from storage.versions import active_version

SETTING = "oos_calibration"


def _where(budget: ComputeBudget) -> str:
    return "GPU" if budget.device == "cuda" else "CPU"


def held_out_cost(budget: ComputeBudget, last_train_s: float | None) -> str:
    """What a held-out calibration costs a retrain here, in words (the added time first, from
    the last retrain's training: to the second below 10 min, so the product reads right).

    >>> from app.serving.compute import budget_for
    >>> held_out_cost(budget_for("cpu"), 88.0)
    "about 6 min more (4x the last retrain's 88 s of training on this CPU)"
    >>> held_out_cost(budget_for("cuda"), None)
    "about 4x a retrain's training on this GPU"
    """
    if not last_train_s:
        return f"about {HELD_OUT_COST:g}x a retrain's training on this {_where(budget)}"
    trained = f"{round(last_train_s)} s" if last_train_s < 600 else span(last_train_s)
    return (
        f"about {span(last_train_s * HELD_OUT_COST)} more ({HELD_OUT_COST:g}x the last "
        f"retrain's {trained} of training on this {_where(budget)})"
    )


def serving_now(live: LivePools, p: ProjectHandle) -> str:
    """What calibrated the out-of-scope thresholds serving now, in one sentence."""
    with live.db.session() as s:
        mv = active_version(s, p.id)
        job = jobs.active_job(s, p.id)
    record = VersionMetrics.from_dict(mv.metrics).oos_calibration if mv is not None else {}
    if mv is not None and record.get("pending"):
        if job is not None and job.model_version_id == mv.id:
            return (
                f"v{mv.id}'s held-out calibration is running: the quick thresholds serve until "
                "it ends."
            )
        return (
            f"v{mv.id}'s held-out calibration was not finished (its job stopped): the quick "
            "thresholds serve; the next retrain calibrates again."
        )
    cal = live.pool(p.id).calibration
    if cal is not None and cal.corrected_by:
        return f"Serving now: thresholds from {cal.corrected_by}."
    if (
        mv is not None
        and record.get("method") == HELD_OUT
        and p.settings.oos_calibration == "quick"
    ):
        return f"Serving now: the pool's own scores (v{mv.id} has a held-out calibration, unused while this is quick)."
    if mv is not None and record.get("reason"):
        return f"Serving now: the pool's own scores (v{mv.id}: {record['reason']})."
    return "Serving now: the pool's own scores."


# What held-out buys, measured (bench/RESULTS.md, "Held-out calibration": BANKING77, 3 seeds).
GAIN = (
    "on BANKING77 held-out thresholds flagged 4-5 % of in-scope questions where the pool's own "
    "scores flag 10-14 % after a retrain"
)


def calibration_line(live: LivePools, p: ProjectHandle, budget: ComputeBudget | None = None) -> str:
    """The setting's line: what the project's retrains run, why here, what held-out costs here,
    and what calibrated the thresholds serving now."""
    budget = budget or process_budget()
    chosen = p.settings.oos_calibration
    cost = held_out_cost(budget, last_training(live.db, p))
    held_out = (
        f"after each retrain's version serves, {HELD_OUT_FOLDS} more trainings by its recipe, "
        f"each without a fifth of the examples, score them as new questions: {cost}; {GAIN}"
    )
    if budget.calibration(chosen) == HELD_OUT:
        runs = f"{'Auto: held-out on this GPU' if chosen == 'auto' else 'Held-out'}: {held_out}."
    else:
        which = f"Auto: quick on this {_where(budget)}" if chosen == "auto" else "Quick"
        runs = (
            f"{which} (thresholds from the pool's own scores). Held-out would take {cost} "
            f"after each retrain's version serves; {GAIN}."
        )
    return f"{runs} {serving_now(live, p)}"
