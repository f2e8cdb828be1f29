"""A project's settings, typed: the one place that reads and checks the JSON stored with a project
(``Project.settings``), so every caller sees the same defaults and the same refusals.

Each field is stored under its own name; a field absent from the stored JSON takes its default
(the out-of-scope target is on at 95 % unless set, and ``None`` turns it off).

Example:
    >>> s = ProjectSettings.from_dict({"anchor_weight": 0, "oos_target_recall": None})
    >>> s.anchor_weight, s.oos_target_recall, s.encode_context, s.serve_int8
    (0.0, None, False, True)
    >>> ProjectSettings.from_dict(s.to_dict()) == s
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.evaluation.oos import DEFAULT_TARGET_RECALL, check_target_recall
from core.retrieval.anchors import DEFAULT_ANCHOR_WEIGHT, check_weight


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
    """

    oos_target_recall: float | None = DEFAULT_TARGET_RECALL
    anchor_weight: float = DEFAULT_ANCHOR_WEIGHT
    encode_context: bool = False
    serve_int8: bool = True

    def __post_init__(self) -> None:
        if self.oos_target_recall is not None:
            object.__setattr__(
                self, "oos_target_recall", check_target_recall(self.oos_target_recall)
            )
        object.__setattr__(self, "anchor_weight", check_weight(self.anchor_weight))
        object.__setattr__(self, "encode_context", bool(self.encode_context))
        object.__setattr__(self, "serve_int8", bool(self.serve_int8))

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
