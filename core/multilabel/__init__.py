"""Multi-label intents (Multi-ConvFiT): the classifier head, per-intent thresholds, metrics."""

from __future__ import annotations

from core.multilabel.head import HeadConfig, MultiLabelHead, load_head
from core.multilabel.metrics import multilabel_report
from core.multilabel.rule import is_multilabel
from core.multilabel.thresholds import DEFAULT_THRESHOLD, Thresholds

__all__ = [
    "DEFAULT_THRESHOLD",
    "HeadConfig",
    "MultiLabelHead",
    "Thresholds",
    "is_multilabel",
    "load_head",
    "multilabel_report",
]
