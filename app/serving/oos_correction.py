"""A version's out-of-scope correction, as every calibration of its pool applies it.

A retrain's held-out calibration (:mod:`app.services.training.retrain_calibrate`, after its version
serves) records with the version how far its encoder's scores of the examples it trained on run
above a new question's: a :class:`~core.evaluation.calibration.ScoreMap`, in
:attr:`~core.evaluation.version_metrics.VersionMetrics.oos_calibration`. The rule for when it
holds, in one place (:func:`version_correction`):

* while that version serves and the project's ``oos_calibration`` setting is not ``quick``, every
  calibration of its pool (after a label change, a new target, a restart, a bundle) maps the
  out-of-fold scores of the pool examples the version trained on (same text, same intents as in
  its dataset version) and leaves the others as they are: an example labelled since is as new to
  the encoder as a question, and a relabelled one no longer is what it trained on. So the
  correction keeps holding as the pool grows, and weighs less as the trained share shrinks;
* it is dropped when another version (or the frozen base) serves, or the setting says ``quick``.

Used by the live pools (:mod:`app.serving.live`), the retrain's calibrate phase and bundles.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.project_settings import ProjectSettings, as_encoded
from core.evaluation.calibration import Correction, ScoreMap
from core.evaluation.data import EvalData
from core.training.trainable import trainable
from storage.datasets import version_rows
from storage.db import Database
from storage.tables import ModelVersion

__all__ = [
    "HELD_OUT",
    "VersionCorrection",
    "example_key",
    "held_out_map",
    "trained_ids",
    "trained_keys",
    "version_correction",
]

HELD_OUT = "held-out"

Key = tuple[str, tuple[str, ...]]


def example_key(text: str, labels: Iterable[str]) -> Key:
    """An example as a training saw it: its text (as encoded) and its intents."""
    return text, tuple(sorted(labels))


def trained_keys(texts: Sequence[str], labels: Sequence[Sequence[str]]) -> frozenset[Key]:
    """The examples a training on these rows saw (its trainable rows)."""
    fit = trainable(texts, labels)
    return frozenset(
        example_key(t, lab) for t, lab in zip(fit.texts, fit.labels, strict=True) if lab
    )


def trained_ids(
    items: Mapping[int, tuple[str, tuple[str, ...]]], trained: frozenset[Key]
) -> frozenset[int]:
    """The pool ids (of ``items``: id -> text as encoded, intents) of examples in ``trained``."""
    return frozenset(
        i for i, (text, labels) in items.items() if example_key(text, labels) in trained
    )


@dataclass(frozen=True)
class VersionCorrection:
    """A version's held-out map and the examples it trained on (see the module)."""

    version_id: int
    map: ScoreMap
    trained: frozenset[Key]
    source: str

    def for_items(self, items: Mapping[int, tuple[str, tuple[str, ...]]]) -> Correction:
        """The correction of a pool whose examples are ``items`` (id -> text as encoded,
        intents): it applies to those the version trained on."""
        return Correction(self.map, trained_ids(items, self.trained), self.source)


def held_out_map(record: Mapping[str, Any] | None) -> ScoreMap | None:
    """The map of a version's ``oos_calibration`` record when it is a finished held-out one."""
    if not record or record.get("method") != HELD_OUT or not record.get("map"):
        return None
    try:
        return ScoreMap.from_dict(record["map"])
    except ValueError:
        return None


def source_words(version_id: int, record: Mapping[str, Any]) -> str:
    """Where a version's correction comes from, in words."""
    folds = int(record.get("folds") or 0)
    return (
        f"v{version_id}'s held-out calibration ({folds} encoders trained by its recipe, each "
        f"without a {'fifth' if folds == 5 else f'1/{folds}'} of its examples, which it scored)"
    )


def version_correction(
    db: Database, mv: ModelVersion | None, settings: ProjectSettings
) -> VersionCorrection | None:
    """The correction a pool served by ``mv`` applies under the project's ``settings`` (see
    the module); None: the pool's own scores calibrate."""
    if mv is None or settings.oos_calibration == "quick":
        return None
    record = (mv.metrics or {}).get("oos_calibration")
    mapped = held_out_map(record)
    if mapped is None or mv.dataset_version_id is None:
        return None
    assert record is not None
    with db.session() as s:
        rows = version_rows(s, mv.dataset_version_id)
    # the texts as the version saw them (after their context when it trained so)
    trained_so = ProjectSettings(encode_context=bool((mv.metrics or {}).get("encode_context")))
    data = EvalData.from_rows(as_encoded(rows, trained_so))
    trained = trained_keys(data.train_texts, data.train_labels)
    return VersionCorrection(mv.id, mapped, trained, source_words(mv.id, record))
