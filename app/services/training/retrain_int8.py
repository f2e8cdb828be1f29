"""The retrain's ``int8`` phase: after the version serves fp32, its int8 ONNX copy is built, its
parity with fp32 checked (:func:`app.services.models.int8.export_version_int8`) and, when it passed, it
is measured on the same rows as it will serve and checked by the same promotion gate; the
``register`` phase then switches the version to it (:mod:`app.services.training.retrain_serve`).

Only where the compute budget builds one (:attr:`app.serving.compute.ComputeBudget.int8_copy`: a CPU,
where the copy serves 1.5-2x faster) and the deployment allows it (``INTENT_STUDIO_INT8``); a
multi-label version serves fp32 (its head decides). The copy is an artifact of its own
(``<version's artifact>-int8``, written under a temporary name and renamed), so the version's
own artifact and its hash never change after it was registered; a copy that failed is removed.

Nothing here stops the version from serving: a failure or a stop only leaves it on fp32, with
the reason recorded."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, cast

from app.services.models.evaluation import gate
from app.services.models.int8 import INT8_OFF, export_version_int8
from app.services.models.retention import leaves_nothing
from app.services.training.retrain_measure import Measured, measure
from app.services.training.retrain_serve import PROMOTION_TOLERANCE
from app.services.training.retrain_state import Int8Outcome, Reporter, RetrainRun, Served, Snapshot
from app.serving.int8 import INT8_DIR, base_int8_rel, load_int8
from core.bundle.onnx import quantised_export
from core.bundle.onnx_encoder import CONFIG_FILE, MODEL_FILE
from core.bundle.onnx_shared import share
from core.bundle.quantise import VARIANTS
from core.encoding.registry import Encoder
from core.errors import logged
from core.training import TrainingCancelled
from storage.artifacts import tree_sha256
from storage.job_phases import INT8

logger = logging.getLogger(__name__)

NOT_ON_GPU = "not built: on a GPU a version serves in fp32 (an int8 copy serves only on a CPU)"
MULTI_LABEL = "multi-label: the head decides, served in fp32"
PENDING = "being built and checked: the fp32 encoder serves until the copy passes parity"
KEPT_BACK = "not built: an automatic retrain's version kept back leaves nothing"


def int8_plan(run: RetrainRun, snap: Snapshot) -> dict[str, Any]:
    """What a new version records of its int8 copy when it is registered: ``pending`` when
    this job builds one after serving, else why it has none (the deployment turned int8 off,
    a GPU serves, a multi-label head decides)."""
    if not run.int8:
        return {"passed": False, "reason": INT8_OFF}
    if not run.budget.int8_copy:
        return {"passed": False, "reason": NOT_ON_GPU}
    if snap.multi:
        return {"passed": False, "reason": MULTI_LABEL}
    return {"passed": False, "pending": True, "reason": PENDING}


class _NotKept(Exception):
    """The copy did not pass: its folder is discarded."""


def int8_copy(run: RetrainRun, snap: Snapshot, served: Served, measured: Measured) -> Int8Outcome:
    """The ``int8`` phase (see the module); none for a version whose files go when the job
    ends (:func:`app.services.models.retention.leaves_nothing`)."""
    if leaves_nothing(snap.trigger, served.promoted):
        return Int8Outcome({"passed": False, "reason": KEPT_BACK}, None, "")
    run.reporter.log("building and checking the int8 copy (fp32 serves meanwhile)", phase=INT8)
    if run.reporter.should_cancel():  # its worker stops: the version serves fp32, the job ends
        return _stopped(run.reporter, "before it started")
    rel = f"{served.rel}-int8"
    encoder = measured.factory.encoder
    try:
        with run.artifacts.writing(rel) as tmp:
            info = export_version_int8(
                encoder,
                snap.gate_data,  # the gate's questions: their fp32 vectors are known
                tmp / INT8_DIR,
                cached=run.live.cache.encode,
                multi_label=snap.multi,
            )
            if not info.get("passed"):
                raise _NotKept
            saved = _share_with_base(run, snap.base, tmp / INT8_DIR, run.artifacts.path(rel))
            if saved:
                info["shared_mb"] = round(saved / 1e6, 1)
        int8 = load_int8(run.artifacts.path(rel) / INT8_DIR)
        # measured as it will serve on the whole test split (with the frozen base and the
        # active version beside it): the version's record from here on
        whole = measure(run, snap, cast(Encoder, int8), None, data=snap.data, phase=INT8)
        metrics = whole.new
        why = None
        if served.promoted:  # it serves only if it passes the gate that promoted the version
            passed, why = gate(metrics, whole.reference, PROMOTION_TOLERANCE)
            if not passed:
                run.artifacts.remove(rel)
                words = f"Its int8 copy was measured below the gate ({why}): fp32 serves."
                return Int8Outcome({**info, "passed": False, "reason": words}, None, words)
        sha, _ = tree_sha256(run.artifacts.path(rel))
        acc = f"accuracy {metrics.accuracy:.3f}" if metrics.accuracy is not None else "measured"
        return Int8Outcome(
            {**info, "artifact": rel, "sha256": sha},
            metrics,
            f"{info.get('reason', 'parity passed')}, {acc}.",
            why,
            whole,
            int8,
        )
    except _NotKept:
        words = f"Its int8 copy did not pass ({info.get('reason')}): fp32 serves."
        return Int8Outcome(info, None, words)
    except TrainingCancelled as exc:  # its worker stops, or the job was reaped: the version stays
        run.artifacts.remove(rel)
        return _stopped(run.reporter, str(exc))
    except Exception as exc:  # the version serves fp32: the copy's failure is only recorded
        run.artifacts.remove(rel)
        logged(logger, "the int8 copy of v%s failed", served.version_id)
        words = f"Its int8 copy failed ({type(exc).__name__}: {exc}): fp32 serves."
        return Int8Outcome({"passed": False, "reason": words}, None, words)


def _share_with_base(run: RetrainRun, base: str, folder: Path, final: Path) -> int:
    """Leave out of the copy what the base encoder's int8 graph of the same recipe holds byte
    for byte (its embeddings and frozen layers: :mod:`core.bundle.onnx_shared`); the bytes
    saved. That graph is built once per base encoder and recipe, beside the base's own copy
    (``base/<encoder>@<fingerprint>-int8-<variant>``, kept for good): only a store of weights,
    it needs no parity of its own (what serves is the version's graph, whole again)."""
    config = json.loads((folder / CONFIG_FILE).read_text("utf-8"))
    variant = str(config.get("variant") or "")
    if not variant or VARIANTS[variant].static:  # calibrated on the pool: nothing in common
        return 0
    rel = f"{base_int8_rel(base)}-int8-{variant}"
    store = run.artifacts.path(rel)
    if not (store / MODEL_FILE).is_file():
        try:
            with run.artifacts.writing(rel) as tmp:
                quantised_export(run.live.models.base_encoder(base), tmp, variant=variant)
        except FileExistsError:  # another worker built it meanwhile
            pass
        store = run.artifacts.path(rel)
    return share(folder, store, final / INT8_DIR, store=rel)


def _stopped(reporter: Reporter, when: str) -> Int8Outcome:
    """The int8 phase cut short: a worker that stops ends the job here (its version is
    registered and serves fp32: handed back, it would be trained again, issue 57), or the job
    ended meanwhile (reaped)."""
    if reporter.handing_back:
        words = (
            f"Its worker stopped before the int8 copy was checked ({when}): fp32 serves; a "
            "retrain builds one."
        )
    else:
        words = f"Its int8 copy was stopped ({when}): fp32 serves."
    return Int8Outcome({"passed": False, "reason": words}, None, words)
