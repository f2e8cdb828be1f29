"""Designing the intent set: out-of-fold scores and the conflicts they reveal (near-duplicates
with different intents, likely mislabels, overlapping intent pairs), candidate intents from
unlabelled logs (:mod:`.clusters`) and merge / split what-ifs estimated on the current
embeddings (:mod:`.whatif`)."""

from __future__ import annotations

from core.design.clusters import MIN_UTTERANCES, Cluster, distinctive_words, find_clusters
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
from core.design.whatif import Part, WhatIf, merge_whatif, split_whatif

__all__ = [
    "MIN_UTTERANCES",
    "Cluster",
    "ConflictReport",
    "Confusable",
    "IntentOverlap",
    "LabelIssue",
    "NearDuplicate",
    "OutOfFold",
    "Part",
    "WhatIf",
    "distinctive_words",
    "find_clusters",
    "find_conflicts",
    "label_issues",
    "merge_whatif",
    "near_duplicates",
    "out_of_fold",
    "overlapping_intents",
    "split_whatif",
]
