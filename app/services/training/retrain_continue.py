"""A retrain's first version continues from the active one (issue 71 item 1).

After a project's first version, a retrain from the base encoder needs the whole recipe to beat
the version that serves: a first pass from the base measured below it and was kept back, and the
designer saw nothing change for minutes. So when the project has an active tuned version of the
same base encoder and method, the job's first checkpoint continues it: a copy of its weights
trains briefly on the utterances whose labels are new or changed since it was trained
(:func:`core.training.pairs.focus_batches`: each of them an anchor a few times, each batch
filled with other intents' examples, at half the recipe's rate), and serves once it passes the
gate. The whole recipe from the base encoder trains behind it and replaces it only when it
measures better (bench/RESULTS.md, "A first version that continues from the active one").

:func:`continuation` decides whether a job continues, and from what; :func:`continue_active`
trains it."""

from __future__ import annotations

import logging
from typing import Any

from app.project_settings import as_encoded
from app.services.training.retrain_state import Continued, RetrainRun, Snapshot
from core.multilabel.rule import is_multilabel
from core.retrieval.scope import in_scope_labels
from core.training import TrainConfig, checkpoint_steps, read_metadata, train_encoder
from storage.datasets import version_rows
from storage.job_phases import TRAINING

logger = logging.getLogger(__name__)

# The methods whose versions a continuation trains on (an adapter's is another recipe)
CONTINUES = ("convfit",)


def continuation(run: RetrainRun, snap: Snapshot, cfg: TrainConfig) -> Continued | None:
    """What the job's first version continues: the active version when it is a tuned version of
    the project's base encoder, trained by the same method as this job, its files are here, and
    some utterance of the training set has a label it was not trained with; None otherwise (the
    job trains from the base encoder only, as a project's first retrain does)."""
    active = snap.active
    if (
        active is None
        or not active.artifact_path
        or cfg.method not in CONTINUES
        or active.method != cfg.method
        or active.base_encoder != snap.base
        or snap.multi
    ):
        return None
    folder = run.artifacts.path(active.artifact_path)
    try:
        if read_metadata(folder)["kind"] not in ("layers", "full"):
            return None
    except (OSError, ValueError):  # its files are gone (pruned) or unreadable: from the base
        return None
    with run.live.db.session() as s:
        before_rows = as_encoded(version_rows(s, active.dataset_version_id or -1), snap.settings)
    before = {
        r.text: tuple(sorted(in_scope_labels(r.labels)))
        for r in before_rows
        if r.split == "train" and in_scope_labels(r.labels)
    }
    if not before or is_multilabel(list(before.values())):
        return None
    known = {name for labels in before.values() for name in labels}
    focus = tuple(
        i
        for i, (text, labels) in enumerate(zip(snap.fit.texts, snap.fit.labels, strict=True))
        if before.get(text) != tuple(sorted(labels))
    )
    if not focus:
        return None
    new = {name for i in focus for name in snap.fit.labels[i]} - known
    model = run.live.models.encoder_for_version(active, snap.base).model
    return Continued(active.id, model, focus, len(new))


def continued_steps(snap: Snapshot, cfg: TrainConfig) -> int:
    """The continuation's optimiser steps (0: the job does not continue)."""
    if snap.continued is None:
        return 0
    return checkpoint_steps(snap.fit.texts, snap.fit.labels, cfg, snap.continued.focus)[-1]


def continue_active(run: RetrainRun, snap: Snapshot, cfg: TrainConfig, checkpoint: Any) -> int:
    """Train the continuation (:class:`Continued`) and hand its model to ``checkpoint`` (saved,
    measured and served like any checkpoint); returns its steps."""
    cont = snap.continued
    assert cont is not None
    fit = snap.fit
    run.reporter.log(f"training: {cont.words()}", phase=TRAINING)
    model = train_encoder(
        snap.base,
        fit.texts,
        fit.labels,
        cfg,
        progress=run.reporter.progress,
        should_cancel=run.reporter.should_cancel,
        device=run.device,
        prefixes=run.live.models.prefixes,
        checkpoint=checkpoint,
        start=cont.model,
        focus=cont.focus,
    )
    return int(model.stats.get("steps") or 0)
