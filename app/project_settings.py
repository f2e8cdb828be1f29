"""A project's settings, typed: the one place that reads and checks the JSON stored with a project
(``Project.settings``), so every caller sees the same defaults and the same refusals.

Each field is stored under its own name; a field absent from the stored JSON takes its default
(the out-of-scope target is on at 95 % unless set, and ``None`` turns it off).

Example:
    >>> s = ProjectSettings.from_dict({"anchor_weight": 0, "oos_target_recall": None})
    >>> s.anchor_weight, s.oos_target_recall, s.encode_context, s.serve_int8, s.oos_calibration
    (0.0, None, False, True, 'auto')
    >>> ProjectSettings.from_dict(s.to_dict()) == s
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from app.compute import CALIBRATIONS
from core.encoding.previous_turn import with_context
from core.evaluation.oos import DEFAULT_TARGET_RECALL, check_target_recall
from core.retrieval.anchors import DEFAULT_ANCHOR_WEIGHT, check_weight
from storage.datasets import SnapshotRow
from storage.utterances import UtteranceRow


@dataclass(frozen=True)
class ProjectSettings:
    """What a project decides for itself.

    Args:
        oos_target_recall: the share of in-scope questions the out-of-scope thresholds keep
            (0.5 to 1; None: out-of-scope detection off).
        anchor_weight: the intents' names and descriptions in each prototype, in examples
            (0: anchors off).
        encode_context: encode each utterance after the turn before it.
        serve_int8: serve a version's int8 encoder when it passed parity.
        oos_calibration: how a retrain calibrates the out-of-scope thresholds of its version
            (:data:`app.compute.CALIBRATIONS`): ``held-out`` (more trainings after the version
            serves; its correction applies while the version serves), ``quick`` (the pool's own
            scores, no correction) or ``auto`` (the device's default, :mod:`app.compute`).
    """

    oos_target_recall: float | None = DEFAULT_TARGET_RECALL
    anchor_weight: float = DEFAULT_ANCHOR_WEIGHT
    encode_context: bool = False
    serve_int8: bool = True
    oos_calibration: str = "auto"

    def __post_init__(self) -> None:
        if self.oos_target_recall is not None:
            object.__setattr__(
                self, "oos_target_recall", check_target_recall(self.oos_target_recall)
            )
        object.__setattr__(self, "anchor_weight", check_weight(self.anchor_weight))
        object.__setattr__(self, "encode_context", bool(self.encode_context))
        object.__setattr__(self, "serve_int8", bool(self.serve_int8))
        if self.oos_calibration not in CALIBRATIONS:
            raise ValueError(
                f"The out-of-scope calibration is one of {', '.join(CALIBRATIONS)}, not "
                f"{self.oos_calibration!r}."
            )

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any] | None) -> ProjectSettings:
        """The settings in a project's stored JSON (absent fields: defaults; other keys are
        not settings of this kind and are ignored).

        Raises:
            ValueError: a stored value out of its range.
        """
        stored = stored or {}
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in stored.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        """Every setting under its stored name."""
        return dataclasses.asdict(self)

    def with_texts(self, changes: Mapping[str, str]) -> ProjectSettings:
        """These settings with ``changes`` (setting name -> the value as typed: ``0.95``,
        ``95%``, ``off``, ``on``...) applied, each by :func:`parse_setting`.

        Example:
            >>> ProjectSettings().with_texts({"oos_target_recall": "90%", "anchor_weight": "off"})
            ProjectSettings(oos_target_recall=0.9, anchor_weight=0.0, encode_context=False, serve_int8=True, oos_calibration='auto')

        Raises:
            ValueError: an unknown setting or a value it does not take (nothing is changed).
        """
        return dataclasses.replace(
            self, **{name: parse_setting(name, text) for name, text in changes.items()}
        )


NAMES = tuple(f.name for f in dataclasses.fields(ProjectSettings))
# The stored names of the settings a bundle records.
OOS_SETTING = "oos_target_recall"
ANCHOR_SETTING = "anchor_weight"


def oos_target(settings: Mapping[str, Any] | None) -> float | None:
    """The project's target in-scope recall (None: out-of-scope detection is off)."""
    return ProjectSettings.from_dict(settings).oos_target_recall


def anchor_weight(settings: Mapping[str, Any] | None) -> float:
    """The project's anchor weight (:mod:`core.retrieval.anchors`; absent: the default)."""
    return ProjectSettings.from_dict(settings).anchor_weight


def oos_calibration(settings: Mapping[str, Any] | None) -> str:
    """The calibration the project chose (``auto``, ``held-out`` or ``quick``)."""
    return ProjectSettings.from_dict(settings).oos_calibration


def encodes_context(settings: Mapping[str, Any] | None) -> bool:
    """Whether the project encodes each utterance after its context (off by default)."""
    return ProjectSettings.from_dict(settings).encode_context


def parse_setting(name: str, text: str | float | bool | None) -> Any:
    """A setting's value from what a person typed (a value of its own type passes through):
    ``oos_target_recall`` a recall (``0.95``, ``95%``) or ``off``; ``anchor_weight`` a number of
    examples or ``off``; ``encode_context`` and ``serve_int8`` ``on`` or ``off``;
    ``oos_calibration`` ``auto``, ``held-out`` or ``quick``.

    Example:
        >>> parse_setting("oos_target_recall", "95%"), parse_setting("encode_context", "on")
        (0.95, True)
        >>> parse_setting("oos_calibration", "Held out")
        'held-out'
    """
    if name not in NAMES:
        raise ValueError(f"Unknown setting {name!r}: use one of {', '.join(NAMES)}.")
    if not isinstance(text, str):
        return text
    word = text.strip().lower()
    if name == "oos_target_recall":
        if word == "off":
            return None
        try:
            number = float(word.rstrip("%"))
        except ValueError:
            raise ValueError(
                f"The target in-scope recall is a number such as 0.95 (or 'off'), not {text!r}."
            ) from None
        return check_target_recall(number / 100 if number > 1 else number)
    if name == "anchor_weight":
        try:
            weight = 0.0 if word == "off" else float(word)
        except ValueError:
            raise ValueError(
                f"The anchor weight is a number of examples such as 1 (or 'off'), not {text!r}."
            ) from None
        return check_weight(weight)
    if name == "oos_calibration":
        chosen = "-".join(word.replace("_", " ").replace("-", " ").split())
        if chosen not in CALIBRATIONS:
            raise ValueError(
                f"The out-of-scope calibration is {', '.join(CALIBRATIONS)}, not {text!r}."
            )
        return chosen
    if word not in ("on", "off"):
        raise ValueError(f"{name} is 'on' or 'off', not {text!r}.")
    return word == "on"


_Row = TypeVar("_Row", UtteranceRow, SnapshotRow)


def as_encoded(rows: Iterable[_Row], settings: dict[str, object] | None) -> list[_Row]:
    """The rows with ``text`` as the encoder sees it: after the row's context when the project
    encodes context (a retrain and an evaluation see what the pool sees), else unchanged."""
    if not encodes_context(settings):
        return list(rows)
    return [
        dataclasses.replace(r, text=with_context(r.text, r.context)) if r.context else r
        for r in rows
    ]
