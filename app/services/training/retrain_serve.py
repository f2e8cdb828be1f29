"""The retrain's ``serve`` and ``register`` phases.

``serve`` (:func:`serve`): the promotion gate on the new version as it serves now, the version
registered with that measurement and, when it passed, made active: from this transaction on the
app's next prediction answers with it. The worker then encodes what the project's first card and
first prediction need in that space (:func:`first_card_vectors`).

``register`` (:func:`register`): the version's record completed once everything after serving
ended: on a CPU, its int8 copy's outcome; when the copy passed parity (and the gate, measured as
it serves), the version's headline becomes the copy's measurement with the fp32 one beside it,
and the project's live pools switch to it (the switch is logged on the job). The queue's
candidates are encoded in the copy's space first: the server switching to it then finds them in
the embedding cache, where it re-encoded them beside the worker on the same cores before."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from app.services.models.evaluation import gate
from app.services.models.retention import leaves_nothing
from app.services.training.retrain_measure import Measured
from app.services.training.retrain_state import (
    Int8Outcome,
    Reporter,
    RetrainRun,
    Served,
    Snapshot,
    Trained,
)
from app.serving.live import LivePools
from core.encoding.cache import CachedEncoder
from core.encoding.registry import Encoder
from core.errors import logged
from core.evaluation.version_metrics import FP32, INT8, VersionMetrics
from core.training.eta import Eta
from storage import jobs
from storage.artifacts import tree_sha256
from storage.db import WriteLock
from storage.job_phases import REGISTERING, SERVING
from storage.versions import NewVersion, move_version, record_metrics, register_version

logger = logging.getLogger(__name__)

PROMOTION_TOLERANCE = 0.01
# What a gate measured on the sample says until the whole split is measured for the record; the
# closing message says it no more once it has been (it read as still to come after the job).
RECORD_LATER = "; the whole split is measured for the record once training ends."


def serve(
    run: RetrainRun,
    snap: Snapshot,
    rel: str,
    encoder: Encoder,
    trained: Trained,
    measured: Measured,
    int8: dict[str, Any] | None = None,
    calibration: dict[str, Any] | None = None,
    *,
    current: Served | None = None,
    prepare: bool = True,
) -> Served:
    """The ``serve`` phase (see the module): the checkpoint ``trained`` (its artifact ``rel``,
    measured) registered as the job's version, or, with ``current`` (the job's version, serving
    an earlier checkpoint that measured worse: an anytime retrain), the version moved to it.
    ``int8``: what the version records of its int8 copy now (``pending`` while the int8 phase
    builds it, else why there is none); ``calibration``: of its out-of-scope calibration
    (``pending`` while the calibrate phase runs the held-out one,
    :mod:`app.services.training.retrain_calibrate`). ``prepare``: encode what the app's first
    card and prediction need in the space that serves now (a worker; a CLI run that nobody
    waits on leaves it to the app's own start)."""
    run.reporter.log(
        "registering the version" if current is None else f"v{current.version_id} moves to it",
        phase=SERVING,
    )
    passed, why = verdict(run, snap, measured)
    step, total = trained.step, trained.total
    stage = stage_words(snap, trained)
    metrics = version_metrics(run, snap, measured, passed, why, int8, calibration, trained, stage)
    note = f"{stage}. {why}" if stage else why
    try:
        sha, size = tree_sha256(run.artifacts.path(rel))
        new = NewVersion(
            project_id=snap.project_id,
            dataset_version_id=snap.dataset_id,
            method=trained.model.method,
            base_encoder=snap.base,
            config=trained.model.config.to_dict(),
            metrics=metrics.to_dict(),
            artifact_path=rel,
            artifact_sha256=sha,
            artifact_size=size,
            note=note,
        )
        with run.live.db.write(WriteLock.project(snap.project_id)) as s:
            jobs.require_running(s, run.job_id)  # cancelled or reaped: nothing it made may count
            if current is None:
                mv_id = register_version(s, new, activate=passed)
                active = passed
            else:  # the gate promotes it, or it was promoted and nobody activated another
                mv_id = current.version_id
                active = move_version(s, mv_id, new, activate=passed and not current.promoted)
            said = verdict_line(snap, mv_id, stage, measured, passed or active)
            jobs.registered(s, run.job_id, mv_id, step if active else None, said)
    except BaseException:
        run.artifacts.remove(rel)  # never leave an unreferenced artifact behind
        raise
    run.live.models.keep(mv_id, sha, encoder)  # the model in memory is the version's: not read back
    run.reporter.log(said)
    if active:
        how = stage or "fully trained"
        run.reporter.log(f"v{mv_id} is active: it answers in fp32 {_where(run)} ({how})")
    # the queue's candidates in this space only when it stays: a later checkpoint or an int8
    # copy on its way replaces it in seconds, and the cores are theirs and the app's
    stays = step >= total and not (int8 or {}).get("pending")
    if prepare:
        first_card_vectors(run.live, snap.project_id, queue=stays, progress=counted(run.reporter))
    promoted = passed or (current is not None and current.promoted)
    return Served(mv_id, rel, promoted, why, metrics, trained.seconds, step, total, stage)


def _where(run: RetrainRun) -> str:
    return "on the GPU" if run.budget.device == "cuda" else "on the CPU"


def verdict(run: RetrainRun, snap: Snapshot, measured: Measured) -> tuple[bool, str]:
    """The promotion gate on a measured checkpoint (:func:`app.services.models.evaluation.gate`
    on the rows it was measured on, against the active version as it serves on the same rows),
    and its words: which rows, and on a sample the difference question by question with its
    95 % interval (issue 71 item 3)."""
    now = replace(measured.new, encoder=FP32)
    passed, why = gate(now, measured.reference, PROMOTION_TOLERANCE)
    if not passed:  # what becomes of it
        why += (
            " An automatic retrain's version kept back leaves nothing: its files go when the "
            "job ends."
            if leaves_nothing(snap.trigger, passed)
            else " You may activate it by hand."
        )
    if measured.sampled and measured.paired is not None:
        why += (
            f" On {measured.paired.n:,} of {len(snap.data.test_texts):,} test questions "
            f"(stratified by intent): {measured.paired.words()}{RECORD_LATER}"
        )
    return passed, f"{why} Measured with the fp32 encoder that serves it {_where(run)}."


def verdict_line(
    snap: Snapshot, version_id: int, stage: str, measured: Measured, serves: bool
) -> str:
    """What a checkpoint measured and whether it serves, in one line for every screen (issue
    71 item 6): "v9 (continuing v8 with 23 new labels) measured 88.6 % vs 88.3 %: serves",
    "v9 (first pass, step 25 of 100) kept back: 86.9 % < 88.3 %, v8 keeps serving"."""
    primary = measured.new.primary
    new, ref = measured.new.score, measured.reference.value(primary)
    name = f"v{version_id}" + (f" ({stage})" if stage else "")
    on = ""
    if measured.sampled and measured.paired is not None:
        on = f" on {measured.paired.n:,} of {len(snap.data.test_texts):,} test questions"
    before = f"v{snap.active.id}" if snap.active else "the frozen base encoder"
    if serves:
        return f"{name} measured {_pct(new)} vs {_pct(ref)}{on}: serves"
    return f"{name} kept back: {_pct(new)} < {_pct(ref)}{on}, {before} keeps serving"


def _pct(value: float | None) -> str:
    return "not measured" if value is None else f"{100 * value:.1f} %"


def stage_words(snap: Snapshot, trained: Trained) -> str:
    """What a checkpoint is, for people: "continuing v8 with 23 new labels", "first pass, step
    25 of 100", or "" (the whole recipe)."""
    if trained.continued:
        return snap.continued.words() if snap.continued is not None else "continued"
    return checkpoint_words(trained.step, trained.total) if trained.step < trained.total else ""


def version_metrics(
    run: RetrainRun,
    snap: Snapshot,
    measured: Measured,
    passed: bool,
    why: str,
    int8: dict[str, Any] | None,
    calibration: dict[str, Any] | None,
    trained: Trained,
    stage: str,
) -> VersionMetrics:
    """What a version records of a measured checkpoint: its measurement as the fp32 encoder
    serves it, the frozen base and the active version on the same rows, the gate, its int8
    copy and out-of-scope calibration so far, its training."""
    step, total = trained.step, trained.total
    now = replace(measured.new, encoder=FP32)
    rows = (
        {"questions": measured.paired.n, "of_questions": len(snap.data.test_texts)}
        if measured.sampled and measured.paired is not None
        else {}
    )
    return replace(
        now,
        base=measured.base,
        reference={
            "version": snap.active.id if snap.active else None,
            "accuracy": measured.reference.accuracy,
            "macro_f1": measured.reference.macro_f1,
        },
        gate={"passed": passed, "reason": why, "tolerance": PROMOTION_TOLERANCE, **rows},
        int8=dict(int8 or {}),
        oos_calibration=dict(calibration or {}),
        train_seconds=round(trained.seconds, 1),
        evaluate_seconds=round(measured.seconds, 1),
        extra={
            **now.extra,
            "steps": step,
            **({"of_steps": total} if step < total else {}),
            **({"continued": stage} if trained.continued else {}),
            "device": str(run.budget.device),
            **({"trigger": snap.trigger} if snap.trigger != "manual" else {}),
            **({"encode_context": True} if snap.use_context else {}),
        },
    )


def checkpoint_words(step: int, total: int) -> str:
    """What a version's checkpoint is, for people: "first pass, step 25 of 100".

    >>> checkpoint_words(25, 100), checkpoint_words(100, 100)
    ('first pass, step 25 of 100', 'step 100 of 100')
    """
    return f"first pass, step {step} of {total}" if step < total else f"step {step} of {total}"


def note_of(step: int, total: int) -> str:
    return checkpoint_words(step, total) if step < total else "fully trained"


def register(
    run: RetrainRun,
    snap: Snapshot,
    served: Served,
    measured: Measured,
    copy: Int8Outcome | None,
    *,
    prepare: bool = True,
) -> str:
    """The ``register`` phase (see the module): the version's int8 outcome recorded, and the
    copy switched in when it passed; returns the job's closing message. ``prepare``: as
    :func:`serve`'s."""
    run.reporter.log("recording the version", phase=REGISTERING)
    headline = served.metrics
    why = served.why
    if copy is not None:
        int8 = dict(copy.info)
        if copy.metrics is not None:
            decided = dict(served.metrics.gate)
            if copy.whole is not None:  # measured on the whole split, not the gate's sample
                decided.pop("questions", None)
                decided.pop("of_questions", None)
            if copy.gate is not None:  # the gate, on what serves from now
                decided["reason"] = f"{copy.gate} Measured with the int8 encoder that serves it."
            whole = copy.whole if copy.whole is not None else measured
            headline = replace(
                copy.metrics,
                encoder=INT8,
                fp32=replace(measured.new, encoder=FP32),
                base=whole.base,
                reference={
                    **served.metrics.reference,
                    "accuracy": whole.reference.accuracy,
                    "macro_f1": whole.reference.macro_f1,
                },
                gate=decided,
                oos_calibration=served.metrics.oos_calibration,
                train_seconds=served.metrics.train_seconds,
                evaluate_seconds=served.metrics.evaluate_seconds,
                extra=served.metrics.extra,
            )
            why += (
                f" Its int8 copy serves since: {copy.words}"
                if served.promoted
                else f" Its int8 copy is ready, to serve once it is made active: {copy.words}"
            )
        elif copy.words:
            why += f" {copy.words}"
        headline = replace(headline, int8=int8)
        # a version kept back serves in no space: nothing to encode for its first card
        ahead = (
            prepare and served.promoted and copy.metrics is not None and copy.encoder is not None
        )
        if ahead:
            # the queue's candidates in the copy's space before it serves: the server that
            # switches to it finds them in the cache (it reads the space's shards as it first
            # uses it), instead of encoding the same rows beside this worker on the same cores
            first_card_vectors(
                run.live, snap.project_id, progress=counted(run.reporter), space=copy.encoder
            )
        if _record_rows(headline, snap)[1]:  # measured whole by now: no longer to come
            why = why.replace(RECORD_LATER, ".")
        with run.live.db.write(WriteLock.project(snap.project_id)) as s:
            record_metrics(s, snap.project_id, served.version_id, headline.to_dict(), note=why)
        if copy.metrics is not None and served.promoted:
            logger.info("v%s: switched to its int8 copy (%s)", served.version_id, copy.words)
            run.reporter.log(f"v{served.version_id} switched to its int8 copy: {copy.words}")
        elif copy.metrics is not None:
            run.reporter.log(f"v{served.version_id}'s int8 copy is ready: {copy.words}")
        if prepare and served.promoted:
            # the space that serves from now on: its pool (its candidates, when encoded ahead,
            # are not read again)
            first_card_vectors(
                run.live, snap.project_id, queue=not ahead, progress=counted(run.reporter)
            )
    acc = headline.accuracy or 0.0
    base_acc = (headline.base.accuracy if headline.base else measured.base.accuracy) or 0.0
    left_out = f" {snap.fit.note()}." if snap.fit.left_out else ""
    rows, _ = _record_rows(headline, snap)
    return (
        f"v{served.version_id}: accuracy {acc:.3f}{rows} (frozen {base_acc:.3f}), trained in "
        f"{served.train_seconds:.0f} s. {why}{left_out}"
    )


def _record_rows(headline: VersionMetrics, snap: Snapshot) -> tuple[str, bool]:
    """The test questions the recorded ``headline`` was measured on, in words (the gate's, on a
    sample, may be fewer), and whether they are the whole split."""
    if headline.split != "test" or not headline.n:
        return "", False
    whole = headline.n >= len(snap.data.test_texts)
    return f" on {'all ' if whole else ''}{headline.n:,} test questions", whole


def counted(reporter: Reporter) -> Callable[[int, int], None]:
    """The first card's utterances counted for ``reporter`` (:meth:`Reporter.vectors`), with
    their time left measured as they encode (none before: "estimating…", not the plan's guess;
    it said "about 0 s" for the 2 s an int8 copy took to load before them)."""
    eta = Eta(0)

    def report(done: int, total: int) -> None:
        nonlocal eta
        if total != eta.total:
            eta = Eta(total)
        reporter.vectors(done, total, eta.update(done))

    return report


def first_card_vectors(
    live: LivePools,
    project_id: int,
    *,
    queue: bool = True,
    progress: Callable[[int, int], None] | None = None,
    space: CachedEncoder | None = None,
) -> None:
    """Encode into the embedding cache (local, and the bucket's when model files live in one)
    what the project's first card and first prediction need in the space it now serves: its
    pool and anchors, its calibration (kept beside the cache, :mod:`app.serving.pools`) and,
    with ``queue``, the labelling queue's candidates, so the app does not compute them while a
    user waits; ``progress(done, total)`` counts the candidates it encodes. ``space``: only the
    candidates, in the space of an encoder about to serve (its pool is built once it does)."""
    from app.access import open_project
    from app.access.auth import LOCAL
    from app.services.queue.queue_order import encode_candidates

    try:
        p = open_project(live.db, project_id, LOCAL)
        before, started = live.cache.encoded, time.monotonic()
        if space is None:
            live.pool(project_id)  # the served pool, even with no queue to order
        if queue:
            encode_candidates(live, p, progress=progress, encoder=space)
        logger.info(
            "project %s: %d utterance(s) encoded for its first card in %.1fs",
            p.name,
            live.cache.encoded - before,
            time.monotonic() - started,
        )
    except Exception:  # the version is registered: the app encodes what is missing itself
        logged(logger, "preparing the vectors of project %s failed", project_id)
