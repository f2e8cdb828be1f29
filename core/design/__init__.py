"""Design assistance over labelled data: out-of-fold scores and the conflicts they reveal
(near-duplicates with different intents, likely mislabels, overlapping intent pairs)."""

from __future__ import annotations

from core.design.conflicts import (
    ConflictReport,
    Confusable,
    IntentOverlap,
    LabelIssue,
    NearDuplicate,
    find_conflicts,
    label_issues,
    near_duplicates,
    overlapping_intents,
)
from core.design.out_of_fold import OutOfFold, out_of_fold

__all__ = [
    "ConflictReport",
    "Confusable",
    "IntentOverlap",
    "LabelIssue",
    "NearDuplicate",
    "OutOfFold",
    "find_conflicts",
    "label_issues",
    "near_duplicates",
    "out_of_fold",
    "overlapping_intents",
]
