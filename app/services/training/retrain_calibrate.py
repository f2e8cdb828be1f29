"""The retrain's ``calibrate`` phase: after its version serves (and, on a CPU, its int8 copy is
settled), the held-out calibration of its out-of-scope thresholds, where the project's
``oos_calibration`` setting asks for it (``auto``: the compute budget's default, held-out on a
GPU: :meth:`app.serving.compute.ComputeBudget.calibration`).

Why: the retrain pulls the pool's own examples together, so the thresholds calibrated from the
pool's own scores flag 10-14 % of in-scope questions after a retrain (BANKING77 and CLINC150, 3
seeds) against a 5 % goal; held out, 4.0-4.8 % on BANKING77 (bench/RESULTS.md).

What it does (the rule: :mod:`core.evaluation.held_out`): the version's own recipe (its
:class:`~core.training.TrainConfig`, from the process's base encoder) trained once per fold of
the examples the version trained on, each time without that fold; the fold's examples scored by
that encoder against the rest of the served pool (its anchors, ``k`` and rule); the map from the
served pool's own out-of-fold scores of those examples onto the held-out ones; recorded with the
version (``VersionMetrics.oos_calibration``) with the thresholds it gives, computed by the one
calibration on the served pool (:func:`core.evaluation.oos.calibrate_predictor` with the
correction): what the app serves from then on. Recording it moves the project's stamp, so every
process's pool recalibrates with it (:mod:`app.serving.oos_correction`, which also says when it
stops applying).

Nothing here stops the version from serving: a failure, a cancel or a worker's stop leaves the
quick thresholds serving, with the reason recorded, and the job ends as succeeded (its version is
registered, so a stopping worker does not hand it back to be trained again:
:func:`storage.jobs.hand_back` refuses a job with a version)."""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import replace
from typing import Any

from app.services.training.retrain_state import RetrainRun, Served, Snapshot
from app.serving.compute import HELD_OUT_COST, ComputeBudget
from app.serving.oos_correction import (
    HELD_OUT,
    example_key,
    source_words,
    trained_ids,
    trained_keys,
)
from core.errors import logged
from core.evaluation.calibration import Correction
from core.evaluation.held_out import (
    HELD_OUT_FOLDS,
    MIN_HELD_OUT,
    HeldOutFold,
    held_out_correction,
    held_out_plan,
)
from core.evaluation.oos import calibrate_predictor
from core.evaluation.version_metrics import VersionMetrics
from core.retrieval.factory import Anchors, PredictorFactory
from core.retrieval.predictor import Predictor
from core.training import (
    TrainConfig,
    TrainingCancelled,
    TrainProgress,
    planned_steps,
    train_encoder,
)
from storage.db import WriteLock
from storage.job_phases import CALIBRATING
from storage.versions import get_version, record_metrics

logger = logging.getLogger(__name__)

PENDING = (
    f"held-out calibration: {HELD_OUT_FOLDS} more trainings after the version serves; the "
    "quick thresholds serve until it ends"
)


def calibration_plan(budget: ComputeBudget, snap: Snapshot) -> dict[str, Any]:
    """What a new version records of its out-of-scope calibration when it is registered:
    ``pending`` when this job runs the held-out one after serving, else the quick one and why."""
    chosen = snap.settings.oos_calibration
    if budget.calibration(chosen) != HELD_OUT:
        why = (
            "the project chose the quick calibration (Data → Project settings)"
            if chosen == "quick"
            else budget.reasons.get("calibration", "")
        )
        return {"method": "quick", "reason": why}
    if snap.multi:
        return {"method": "quick", "reason": "multi-label: the head decides 'no intent' itself"}
    if snap.settings.oos_target_recall is None:
        return {"method": "quick", "reason": "out-of-scope detection is off"}
    return {"method": HELD_OUT, "pending": True, "reason": PENDING}


def held_out_steps(snap: Snapshot, cfg: TrainConfig) -> int:
    """The held-out encoders' steps, planned before training: each trains on about
    ``(folds - 1) / folds`` of the rows, so all of them about ``folds - 1`` times the retrain's
    steps (:data:`app.serving.compute.HELD_OUT_COST`)."""
    return round(planned_steps(snap.fit.texts, snap.fit.labels, cfg) * HELD_OUT_COST)


def calibrate(
    run: RetrainRun,
    snap: Snapshot,
    cfg: TrainConfig,
    served: Served,
    plan: dict[str, Any],
) -> str:
    """The ``calibrate`` phase (see the module); returns a sentence for the job's closing
    message ("" when there was nothing to do)."""
    if not plan.get("pending"):
        return ""
    run.reporter.log(
        f"calibrating out of scope on {HELD_OUT_FOLDS} held-out encoders "
        f"(v{served.version_id} answers meanwhile)",
        phase=CALIBRATING,
    )
    started = time.monotonic()
    try:
        record = _held_out(run, snap, cfg, served)
    except TrainingCancelled as exc:  # cancelled, or the worker stops: the version stays
        record = _quick(f"the held-out calibration was stopped ({exc})")
    except Exception as exc:  # the version serves: the calibration's failure is only recorded
        # (a programming error is raised again: the version's record stays pending, which
        # serving_now says as "not finished", the quick thresholds serving)
        logged(logger, "the held-out calibration of v%s failed", served.version_id)
        record = _quick(f"the held-out calibration failed ({type(exc).__name__}: {exc})")
    finally:
        gc.collect()  # the held-out encoders' memory, before the next job
    record["seconds"] = round(time.monotonic() - started, 1)
    words = _words(served.version_id, record)
    _record(run, snap, served, record, words)
    if record.get("method") == HELD_OUT:
        pool = run.live.pool(snap.project_id)  # calibrated with it: kept for the app's process
        recorded, now = record.get("thresholds"), pool.predictor.thresholds
        if recorded is not None and dict(now) != recorded:  # labels changed meanwhile
            logger.info("v%s: the served thresholds moved since: %s", served.version_id, now)
    run.reporter.log(words)
    return words


def _quick(why: str) -> dict[str, Any]:
    return {"method": "quick", "reason": f"{why}: the quick thresholds serve"}


def _held_out(run: RetrainRun, snap: Snapshot, cfg: TrainConfig, served: Served) -> dict[str, Any]:
    """The held-out calibration of the served pool (see the module): its record."""
    if not served.promoted:
        return _quick(f"v{served.version_id} does not serve (the gate kept the active version)")
    pool = run.live.pool(snap.project_id)
    if pool.model_version_id != served.version_id:
        return _quick("another version serves now")
    with pool.lock:  # a copy of the served pool: labels may change while the encoders train
        every, _, _, _ = pool.index.examples()
        predictor = pool.predictor.fold(every)
        items, encoder = dict(pool.items), pool.encoder
        oos, target = list(pool.out_of_scope.values()), pool.target_recall
    keys = trained_keys(snap.fit.texts, snap.fit.labels)
    trained = trained_ids(items, keys)
    plan = held_out_plan(predictor, trained)
    if sum(len(f.held) for f in plan) < MIN_HELD_OUT:
        return _quick(
            f"too few examples to hold out ({len(trained)} trained in the pool, "
            f"{MIN_HELD_OUT} needed)"
        )
    space = _FoldSpace(run, snap, cfg, items, keys, plan)
    space.factory = run.live.factories.predictor_factory(snap.project_id, encoder, snap.settings)
    result = held_out_correction(predictor, trained, plan, space)
    if result is None:
        return _quick("too few held-out scores")
    record: dict[str, Any] = {
        "method": HELD_OUT,
        "map": result.map.to_dict(),
        "folds": result.folds,
        "held": result.held,
        "scores": result.scores,
        "trained": len(trained),
        "steps": space.done,
        "device": str(run.device or "cpu"),
    }
    if target is not None:  # the thresholds the served pool gets with it, by the one rule
        correction = Correction(result.map, trained, source_words(served.version_id, record))
        vectors = run.live.cache.encode(encoder, oos) if oos else None
        cal = calibrate_predictor(
            predictor, out_of_scope=vectors, target_recall=target, correction=correction
        )
        record.update(
            target_recall=target,
            thresholds=dict(cal.thresholds),
            pool_thresholds=(
                {"default": cal.uncorrected}
                if cal.uncorrected is not None
                else dict(cal.thresholds)
            ),
        )
    return record


class _FoldSpace:
    """Trains a held-out encoder per fold and puts the pool in its space
    (:func:`core.evaluation.held_out.held_out_correction`'s ``fold_space``), reporting the
    steps of all the folds as one count."""

    factory: PredictorFactory

    def __init__(
        self,
        run: RetrainRun,
        snap: Snapshot,
        cfg: TrainConfig,
        items: dict[int, tuple[str, tuple[str, ...]]],
        keys: frozenset[tuple[str, tuple[str, ...]]],
        plan: list[HeldOutFold],
    ) -> None:
        self.run, self.snap, self.cfg = run, snap, cfg
        self.items, self.keys = items, keys
        self.rows = [self._rows(fold) for fold in plan]
        self.total = sum(planned_steps(t, lab, cfg) for t, lab in self.rows)
        self.done, self.started, self.fold = 0, time.monotonic(), 0

    def _rows(self, fold: HeldOutFold) -> tuple[list[str], list[tuple[str, ...]]]:
        """The version's training rows less the fold's examples."""
        out = {example_key(*self.items[i]) for i in fold.held}
        fit = self.snap.fit
        kept = [
            (t, lab)
            for t, lab in zip(fit.texts, fit.labels, strict=True)
            if example_key(t, lab) not in out
        ]
        return [t for t, _ in kept], [lab for _, lab in kept]

    def _progress(self, p: TrainProgress) -> None:
        step = self.done + p.step
        total = max(self.total, step)
        elapsed = time.monotonic() - self.started
        eta = elapsed / step * (total - step) if step else None
        self.run.reporter.progress(TrainProgress(step, total, p.loss, elapsed, eta))

    def __call__(self, fold: HeldOutFold) -> tuple[Predictor, Any]:
        texts, labels = self.rows[self.fold]
        self.fold += 1
        model = train_encoder(
            self.snap.base,
            texts,
            labels,
            self.cfg,
            progress=self._progress,
            should_cancel=self.run.reporter.should_cancel,
            device=self.run.device,
            prefixes=self.run.live.models.prefixes,
        )
        self.done += int(model.stats.get("steps") or 0)
        # its vectors are never cached: the encoder is thrown away after this fold
        encoder = model.encoder()
        a = self.factory.anchors
        factory = self.factory.replace(
            encoder=encoder, anchors=None if a is None else Anchors(a.texts, a.weight)
        ).prepared()
        rest = list(fold.rest)
        vectors = encoder.encode([self.items[i][0] for i in [*rest, *fold.held]])
        pool = factory.build(
            [self.items[i][0] for i in rest],
            [self.items[i][1] for i in rest],
            vectors=vectors[: len(rest)],
            ids=rest,
        )
        return pool, vectors[len(rest) :]


def _words(version_id: int, record: dict[str, Any]) -> str:
    """The record in one sentence (the job's log and closing message, the version's note)."""
    if record.get("method") != HELD_OUT:
        return f"Out of scope: {record.get('reason', 'the quick calibration')}."
    now = (record.get("thresholds") or {}).get("default")
    before = (record.get("pool_thresholds") or {}).get("default")
    moved = (
        f": project-wide threshold {now:.2f} (from the pool's own scores {before:.2f})"
        if now is not None and before is not None
        else ""
    )
    return (
        f"Out of scope: v{version_id}'s thresholds come from its held-out calibration "
        f"({record.get('folds')} encoders, {record.get('scores')} held-out scores, "
        f"{record.get('seconds', 0):.0f} s){moved}."
    )


def _record(
    run: RetrainRun, snap: Snapshot, served: Served, record: dict[str, Any], words: str
) -> None:
    """The version's record completed with its calibration (its metrics as they are now: the
    int8 phase may have changed them) and the sentence added to its note."""
    with run.live.db.write(WriteLock.project(snap.project_id)) as s:
        mv = get_version(s, snap.project_id, served.version_id)
        metrics = replace(VersionMetrics.from_dict(mv.metrics), oos_calibration=record)
        note = f"{mv.note} {words}".strip() if mv.note else words
        record_metrics(s, snap.project_id, served.version_id, metrics.to_dict(), note=note)
