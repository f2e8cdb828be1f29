"""Designing the intent set: candidate intents from unlabelled logs (:mod:`.clusters`) and
merge / split what-ifs estimated on the current embeddings (:mod:`.whatif`)."""

from __future__ import annotations

from core.design.clusters import MIN_UTTERANCES, Cluster, distinctive_words, find_clusters
from core.design.whatif import Part, WhatIf, merge_whatif, split_whatif

__all__ = [
    "MIN_UTTERANCES",
    "Cluster",
    "Part",
    "WhatIf",
    "distinctive_words",
    "find_clusters",
    "merge_whatif",
    "split_whatif",
]
