"""Results already computed, kept on disk: an unchanged version on unchanged rows is not
evaluated again (:class:`EvalMemo`), an unchanged pool not calibrated again at each start
(:mod:`app.serving.pools`).

A retrain evaluates the new encoder, the frozen base and the active version; a report and the
Train tab evaluate the active version and the frozen base again. When neither the encoder nor
the rows nor anything else that decides changed, that is the same computation with the same
result. :class:`EvalMemo` keeps each result (a :class:`VersionMetrics` dict) under a key of
everything :func:`app.services.models.evaluation.evaluate_version` reads: the encoder's fingerprint (and
its separate label encoder's), the anchors (texts and weight), ``k``, the rule, the context
encoding, the rows (texts and label sets of both splits), the multi-label switch and head
options, and the source of the code that scores (a change there measures again). Only a
measurement whose head is not wanted can come from it (a new version's head is saved with it).

Files live under ``<cache dir>/evaluations`` (one JSON per key; the newest
:data:`KEPT` are kept); a file that cannot be read is a miss.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> memo = EvalMemo(Path(tempfile.mkdtemp()))
    >>> memo.get("k1") is None
    True
    >>> memo.put("k1", VersionMetrics(accuracy=0.9))
    >>> memo.get("k1").accuracy
    0.9
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.encoding.anchor_encoder import anchor_encoder_of
from core.evaluation.data import EvalData
from core.evaluation.version_metrics import VersionMetrics
from core.retrieval.factory import PredictorFactory

logger = logging.getLogger(__name__)

KEPT = 200  # result files kept (the newest)
# The code an evaluation's numbers come from: a change to any of these measures again.
_SOURCES = (
    "app/services/models/evaluation.py",
    "core/evaluation/scoring.py",
    "core/evaluation/multilabel.py",
    "core/evaluation/space.py",
    "core/folds.py",
    "core/retrieval/knn.py",
    "core/retrieval/rule.py",
    "core/retrieval/scores.py",
    "core/retrieval/store.py",
    "core/retrieval/factory.py",
    "core/retrieval/predictor.py",
    "core/multilabel/head.py",
    "core/multilabel/tuning.py",
    "core/multilabel/thresholds.py",
)


@functools.cache
def source_hash(sources: tuple[str, ...] = _SOURCES) -> str:
    """A hash of some of the app's source files (paths from the checkout's root), once per
    process: a result computed by other code is not read."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in sources:
        path = root / rel
        h.update(rel.encode() + b"\0")
        h.update(path.read_bytes() if path.is_file() else b"-")
    return h.hexdigest()[:16]


def code_version() -> str:
    """:func:`source_hash` of the scoring code (:data:`_SOURCES`)."""
    return source_hash(_SOURCES)


def digest(parts: Mapping[str, Any]) -> str:
    """The key of a result made of ``parts`` (JSON-able)."""
    blob = json.dumps(parts, sort_keys=True, default=list).encode()
    return hashlib.sha256(blob).hexdigest()


def evaluation_key(
    factory: PredictorFactory,
    data: EvalData,
    *,
    multi_label: bool,
    head: Mapping[str, Any] | None,
) -> str | None:
    """The key of :func:`app.services.models.evaluation.evaluate_version`'s result for these inputs;
    None when the encoder has no fingerprint (nothing then says two encoders are the same)."""
    fingerprint = getattr(factory.encoder, "fingerprint", None)
    if not fingerprint:
        return None
    anchors = factory.anchors
    parts = {
        "code": code_version(),
        "encoder": str(fingerprint),
        "anchor_encoder": str(getattr(anchor_encoder_of(factory.encoder), "fingerprint", "")),
        "anchors": (
            [sorted(anchors.texts.items()), anchors.weight]
            if anchors is not None and anchors.on
            else None
        ),
        "k": factory.k,
        "rule": factory.rule,
        "context": factory.use_context,
        "multi_label": multi_label,
        "head": dict(head or {}) if multi_label else None,
        "rows": _rows(data),
    }
    return digest(parts)


def _rows(data: EvalData) -> list[Any]:
    """The rows as the key sees them: scored on a test split the order of the rows changes
    nothing (a retrain reads them in its snapshot's order, a live evaluation in the table's), so
    they are sorted; cross-validation's folds depend on the order, so it is kept."""
    train = list(zip(data.train_texts, data.train_labels, strict=True))
    if not data.test_texts:
        return [train, []]
    test = list(zip(data.test_texts, data.test_labels, strict=True))
    return [sorted(train), sorted(test)]


class JsonMemo:
    """Results (JSON objects) under ``root``, one file per key, the newest :data:`KEPT` kept;
    a file that cannot be read is a miss, a disk that cannot be written only costs the next
    reader the computation."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def read(self, key: str | None) -> dict[str, Any] | None:
        if key is None:
            return None
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write(self, key: str | None, data: Mapping[str, Any]) -> None:
        if key is None:
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = self.root / f".{key}.{uuid.uuid4().hex}"
            tmp.write_text(json.dumps(dict(data)), encoding="utf-8")
            os.replace(tmp, self._path(key))
            self._prune()
        except OSError as exc:  # a read-only or full disk: computed again next time
            logger.warning("could not keep a result in %s: %s", self.root, exc)

    def _prune(self) -> None:
        files = sorted(self.root.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in files[:-KEPT]:
            old.unlink(missing_ok=True)


class EvalMemo(JsonMemo):
    """Measured evaluations under ``root`` (see the module)."""

    def get(self, key: str | None) -> VersionMetrics | None:
        data = self.read(key)
        return VersionMetrics.from_dict(data) if data is not None else None

    def put(self, key: str | None, metrics: VersionMetrics) -> None:
        self.write(key, metrics.to_dict())
