"""What a model version's measurement says, typed: :class:`VersionMetrics` reads the ``metrics``
JSON a retrain stores with the version (and a bundle's manifest carries), so the history, the
compare view, the gate, the report and the int8 serving decision read fields, not string keys.

A version whose int8 copy passed parity records the int8 copy's measurement (what serves) as
its headline, labelled ``encoder="int8"``, and the fp32 encoder's beside it (``fp32``);
:meth:`VersionMetrics.served` gives the one that serves.

The stored JSON stays the format (old rows read the same): :meth:`VersionMetrics.from_dict`
keeps every key it does not know in ``extra`` and :meth:`VersionMetrics.to_dict` writes them back.

Example:
    >>> m = VersionMetrics.from_dict({"primary": "accuracy", "accuracy": 0.87, "n": 500,
    ...     "base": {"accuracy": 0.84}, "int8": {"passed": True}, "steps": 120})
    >>> m.score, m.base.accuracy, m.int8_passed, m.extra
    (0.87, 0.84, True, {'steps': 120})
    >>> VersionMetrics.from_dict(m.to_dict()) == m
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

_NESTED = ("base", "fp32")
# What a version's headline numbers measured: its int8 ONNX copy (when it passed parity, the
# encoder that serves by default) or the fp32 encoder (every other version, and older rows).
INT8, FP32 = "int8", "fp32"
_HEADLINES = ("accuracy", "macro_f1", "micro_f1", "exact_match", "silhouette")


@dataclass(frozen=True)
class VersionMetrics:
    """One version's measurement (see the module). Every field is optional: a version trained
    before a field existed, or a frozen-base measurement, simply has less."""

    primary: str = "accuracy"  # the metric the gate and the summary compare
    accuracy: float | None = None  # single-label: top-1; multi-label: exact match
    macro_f1: float | None = None
    micro_f1: float | None = None  # multi-label's primary
    exact_match: float | None = None
    n: int | None = None  # rows measured
    split: str | None = None  # "test" or "cross-validation"
    k: int | None = None
    folds: int | None = None  # cross-validation's folds
    multi_label: bool = False
    threshold: float | None = None  # multi-label decision threshold
    silhouette: float | None = None
    anchor_weight: float | None = None  # the anchors' weight it was measured with
    per_intent: dict[str, dict[str, float]] = field(default_factory=dict)
    cooccurrence: list[dict[str, Any]] = field(default_factory=list)  # multi-label pairs
    confusion: dict[str, Any] = field(default_factory=dict)  # {"labels": [...], "matrix": [[...]]}
    head: dict[str, Any] = field(default_factory=dict)  # the multi-label head's options
    base: VersionMetrics | None = None  # the frozen base encoder on the same rows
    reference: dict[str, Any] = field(default_factory=dict)  # what the gate compared against
    gate: dict[str, Any] = field(default_factory=dict)  # {"passed", "reason", "tolerance"}
    int8: dict[str, Any] = field(default_factory=dict)  # the int8 copy's parity check
    # how its out-of-scope thresholds were calibrated after it served: the held-out
    # calibration's map and numbers (app.services.training.retrain_calibrate), or why there is none
    oos_calibration: dict[str, Any] = field(default_factory=dict)
    encoder: str | None = None  # "int8" or "fp32": the encoder these numbers measured (None: fp32)
    fp32: VersionMetrics | None = None  # with ``encoder="int8"``: the fp32 encoder, same rows
    train_seconds: float | None = None
    evaluate_seconds: float | None = None
    version_label: str | None = None  # a live evaluation's "v3" / "frozen base" (not stored)
    extra: dict[str, Any] = field(default_factory=dict)  # every other stored key, kept

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> VersionMetrics:
        """The metrics of a stored dict (None or empty: nothing measured)."""
        data = dict(data or {})
        known = {f.name for f in fields(cls)} - {"extra"}
        values: dict[str, Any] = {k: data.pop(k) for k in list(data) if k in known}
        for name in _NESTED:
            if isinstance(values.get(name), Mapping) and values[name]:
                values[name] = cls.from_dict(values[name])
            elif name in values:
                values[name] = None
        dicts = ("per_intent", "confusion", "head", "reference", "gate", "int8", "oos_calibration")
        for name in dicts:
            values[name] = dict(values.get(name) or {})
        values["cooccurrence"] = list(values.get("cooccurrence") or [])
        return cls(**values, extra=data)

    def to_dict(self) -> dict[str, Any]:
        """The stored form: the fields that hold something, then ``extra``."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "extra" or value is None or value == {} or value == []:
                continue
            if f.name == "multi_label" and not value:
                continue
            out[f.name] = value.to_dict() if isinstance(value, VersionMetrics) else value
        return {**out, **self.extra}

    @property
    def score(self) -> float | None:
        """The primary metric's value (None: not measured, or not a finite number)."""
        return self.value(self.primary)

    def value(self, name: str) -> float | None:
        """A headline metric by name (``accuracy``, ``macro_f1``, ``micro_f1``, ``exact_match``,
        ``silhouette``...): None when not measured or not a finite number."""
        value: Any = getattr(self, name, None) if name in _HEADLINES else self.extra.get(name)
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
        return number if math.isfinite(number) else None

    @property
    def measured_with(self) -> str:
        """``"int8"`` or ``"fp32"``: the encoder the headline numbers are of."""
        return self.encoder or FP32

    def served(self, int8: bool) -> VersionMetrics:
        """The measurement of the encoder that serves: these numbers, or, when they are the int8
        copy's and the version serves fp32 (``int8`` False: the project turned int8 off), the
        fp32 encoder's on the same rows with this record's gate, frozen base and parity check.

        >>> m = VersionMetrics(accuracy=0.93, encoder="int8", int8={"passed": True},
        ...     fp32=VersionMetrics(accuracy=0.94, encoder="fp32"))
        >>> m.served(True).accuracy, m.served(False).accuracy, m.served(False).measured_with
        (0.93, 0.94, 'fp32')
        """
        if int8 or self.encoder != INT8 or self.fp32 is None:
            return self
        return replace(
            self.fp32,
            base=self.base,
            reference=self.reference,
            gate=self.gate,
            int8=self.int8,
            oos_calibration=self.oos_calibration,
            train_seconds=self.train_seconds,
            evaluate_seconds=self.evaluate_seconds,
            version_label=self.version_label,
            extra=self.extra,
            encoder=FP32,
            fp32=None,
        )

    @property
    def int8_passed(self) -> bool:
        """Whether the version's int8 copy was exported and passed parity."""
        return bool(self.int8.get("passed"))

    def f1_by_intent(self) -> dict[str, float]:
        """Each intent's F1, for the intents with test rows."""
        return {k: float(v["f1"]) for k, v in self.per_intent.items() if v.get("support")}
