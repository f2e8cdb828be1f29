"""What an evaluation is run on: the labelled rows of a project, as train and test lists.

Example:
    >>> EvalData(["hi"], [("greet",)], [], []).split
    'cv5'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from core.retrieval.scope import in_scope_labels

CV_FOLDS = 5


class Row(Protocol):
    """A stored utterance as the evaluation reads it."""

    @property
    def text(self) -> str: ...

    @property
    def labels(self) -> tuple[str, ...]: ...

    @property
    def split(self) -> str: ...


@dataclass(frozen=True)
class EvalData:
    """Train and test texts with their label sets. Scored on ``test`` when there is one, else by
    :data:`CV_FOLDS`-fold cross-validation of ``train`` (``split`` says which)."""

    train_texts: list[str]
    train_labels: list[tuple[str, ...]]
    test_texts: list[str]
    test_labels: list[tuple[str, ...]]

    @property
    def split(self) -> str:
        return "test" if self.test_texts else f"cv{CV_FOLDS}"

    @classmethod
    def from_rows(cls, rows: Iterable[Row], *, with_unlabelled: bool = False) -> EvalData:
        """The `train` and `test` rows of a project. Rows with no intent are left out unless
        ``with_unlabelled`` (a multi-label head learns from them to say "none of these"). The
        reserved :data:`~core.evaluation.oos.OUT_OF_SCOPE` label is never a class: such a row
        counts as one with no intent."""
        keep = [
            (r, in_scope_labels(r.labels))
            for r in rows
            if r.split in ("train", "test") and (in_scope_labels(r.labels) or with_unlabelled)
        ]
        train = [(r, labels) for r, labels in keep if r.split == "train"]
        test = [(r, labels) for r, labels in keep if r.split == "test"]
        return cls(
            [r.text for r, _ in train],
            [labels for _, labels in train],
            [r.text for r, _ in test],
            [labels for _, labels in test],
        )
