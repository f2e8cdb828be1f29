"""The models a process has loaded: the frozen base encoders, each version's trained encoder
(:func:`core.training.load_trained`, which reads old versions too), its int8 ONNX copy
(:mod:`app.serving.int8` decides whether it serves) and its multi-label head.

Guarantees: a version's model is read from its artifact once per process, keyed by the version
and the artifact's hash (a version re-registered under a new artifact is read again), and not at
all by the process that trained it (:meth:`Models.keep`: the retrain hands its model in memory);
a base encoder is the process-wide one of :func:`core.encoding.registry.load_encoder`. Lock: one, held
while a version's model loads (two threads asking for the same version load it once; asking for
another version waits for that load). Used by every process: the server, the worker, the CLI.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from app.project_settings import ProjectSettings
from app.serving.compute import ComputeBudget, process_budget
from app.serving.int8 import (
    INT8_DIR,
    base_int8_record,
    base_int8_rel,
    int8_folder,
    load_int8,
    serves_base_int8,
    serves_int8,
)
from core.bundle.onnx_encoder import MODEL_FILE, OnnxEncoder
from core.encoding.cache import CachedEncoder
from core.encoding.registry import Encoder, load_encoder
from core.errors import logged
from core.evaluation.version_metrics import VersionMetrics
from core.multilabel.head import HEAD_DIR, MultiLabelHead, load_head
from storage.artifacts import ArtifactStore
from storage.db import Database
from storage.tables import ModelVersion

if TYPE_CHECKING:
    from core.training.prefix_store import PrefixStore

logger = logging.getLogger(__name__)

# The versions' models a worker keeps loaded between jobs, those used last (issue 73 item 13):
# one per project it trained was ~0.2 GB each, without a bound.
KEPT_VERSIONS = 4


class Models:
    def __init__(
        self, artifacts: ArtifactStore, device: str | None, cache_dir: Path | None = None
    ) -> None:
        self.artifacts = artifacts
        self.device = device
        self.cache_dir = cache_dir  # where the frozen layers' states are kept (``prefixes``)
        self._prefixes: PrefixStore | None = None
        self._encoders: dict[str, Encoder] = {}
        self._int8: dict[str, OnnxEncoder | None] = {}
        self._used: dict[str, float] = {}  # when each loaded model was last asked for
        self._lock = threading.Lock()

    @property
    def budget(self) -> ComputeBudget:
        """What this process's device makes cheap (:mod:`app.serving.compute`): whether int8 serves
        here, a new project's encoder."""
        return process_budget(self.device)

    @property
    def prefixes(self) -> PrefixStore:
        """The frozen layers' states this process's trainings and measurements computed, kept
        for the next job (:mod:`core.training.prefix_store`; imports torch on first use)."""
        with self._lock:
            if self._prefixes is None:
                from core.training.prefix_store import PrefixStore

                folder = self.cache_dir / "prefix" if self.cache_dir is not None else None
                self._prefixes = PrefixStore(folder)
            return self._prefixes

    def save_prefixes(self) -> None:
        """Write the frozen layers' states the jobs added for the next process (nothing when no
        job trained here); a disk that refuses them is logged, never the job's failure."""
        with self._lock:
            store = self._prefixes
        if store is None:
            return
        try:
            store.save()
        except OSError:
            logger.exception("the frozen layers' states were not written (computed again next)")

    def keep(self, version_id: int, artifact_sha256: str, encoder: Encoder) -> None:
        """Hold ``encoder`` as the model of version ``version_id`` whose artifact has this hash
        (already in memory: the retrain that trained it), so this process never reads it back
        from the artifact."""
        with self._lock:
            key = f"mv:{version_id}:{artifact_sha256}"
            self._encoders[key] = encoder
            self._used[key] = time.monotonic()

    def loaded_versions(self) -> set[int]:
        """The versions whose model (fp32 or int8) this process holds now."""
        with self._lock:
            return {v for key in (*self._encoders, *self._int8) if (v := _version(key)) is not None}

    def keep_only(self, version_ids: Collection[int], most: int = KEPT_VERSIONS) -> int:
        """Let go of the loaded models (fp32 and int8) of every version not in ``version_ids``,
        and of all but the ``most`` used last of those (a version let go of is read again from
        its artifact when a job needs it: under a second for a version that stores its tuned
        layers); how many. A worker calls it between jobs with the versions that serve: each
        job loaded the version it measured against and kept it, so a long-lived worker held
        one more model per retrain for good (issue 57 item 7), and one per project it trained
        (issue 73 item 13: 8 projects, 3.0 GB)."""
        with self._lock:
            keys = [k for k in (*self._encoders, *self._int8) if _version(k) is not None]
            serving = {_version(k) for k in keys if _version(k) in version_ids}
            recent = set(sorted(serving, key=self._last_use, reverse=True)[:most])
            gone = [k for k in keys if _version(k) not in recent]
            for key in gone:
                self._encoders.pop(key, None)
                self._int8.pop(key, None)
                self._used.pop(key, None)
        return len(gone)

    def _last_use(self, version_id: int | None) -> float:
        return max((t for k, t in self._used.items() if _version(k) == version_id), default=0.0)

    def base_encoder(self, name: str = "minilm") -> Encoder:
        return load_encoder(name, device=self.device)

    def encoder_for_version(self, mv: ModelVersion | None, base: str = "minilm") -> Encoder:
        """The encoder of a model version (its artifact), or the frozen base when ``mv`` is None."""
        if mv is None or not mv.artifact_path:
            return self.base_encoder(mv.base_encoder if mv is not None else base)
        key = f"mv:{mv.id}:{mv.artifact_sha256}"
        with self._lock:
            if key not in self._encoders:
                from core.training import load_trained

                path: Path = self.artifacts.path(mv.artifact_path)
                self._encoders[key] = load_trained(path, device=self.device)
            self._used[key] = time.monotonic()
            return self._encoders[key]

    def serving_encoder(
        self, mv: ModelVersion | None, base: str, settings: ProjectSettings
    ) -> CachedEncoder:
        """The encoder a project's live pool serves with: the version's int8 ONNX copy when it
        passed parity, the project allows it and this process serves on a CPU
        (:func:`app.serving.int8.serves_int8`), else the fp32 encoder (also when the int8 copy
        is missing or will not load). The int8 copy embeds its anchors as the fp32 encoder does
        (an old version's separate label encoder: :func:`core.training.load_label_encoder`)."""
        if mv is None:
            return self.base_serving(base, settings)
        metrics = VersionMetrics.from_dict(mv.metrics)
        if not mv.artifact_path or not serves_int8(metrics, settings, self.budget):
            return self.encoder_for_version(mv, base)
        int8 = self.int8_copy(mv)
        return int8 if int8 is not None else self.encoder_for_version(mv, base)

    def serving_key(self, mv: ModelVersion | None, base: str, settings: ProjectSettings) -> str:
        """What :meth:`serving_encoder` serves a project with, named without loading it: the
        version and its artifact, and whether its int8 copy serves (the rule of
        :func:`app.serving.int8.serves_int8`); the base encoder (its int8 copy where it may)
        for a project never retrained. Equal keys: the same encoder."""
        if mv is None or not mv.artifact_path:
            name = mv.base_encoder if mv is not None else base
            record = base_int8_record(self.artifacts, name) if settings.serve_int8 else None
            kind = "int8" if serves_base_int8(record, settings, self.budget) else "fp32"
            return f"base:{name}:{kind}"
        int8 = serves_int8(VersionMetrics.from_dict(mv.metrics), settings, self.budget)
        return f"mv:{mv.id}:{mv.artifact_sha256}:{'int8' if int8 else 'fp32'}"

    def int8_copy(self, mv: ModelVersion | None) -> OnnxEncoder | None:
        """The version's int8 ONNX copy where it passed parity (whether or not it serves here:
        a bundle of the version in int8 carries it), loaded once per process; None when it has
        none, or it is missing or will not load."""
        metrics = VersionMetrics.from_dict(mv.metrics) if mv is not None else None
        if mv is None or metrics is None or not mv.artifact_path or not metrics.int8_passed:
            return None
        path = self.artifacts.path(mv.artifact_path)
        folder = int8_folder(self.artifacts, mv.artifact_path, metrics)
        if not (folder / MODEL_FILE).is_file():  # removed since: serve fp32
            return None
        key = f"int8:{mv.id}:{mv.artifact_sha256}:{folder.name}"
        with self._lock:
            if key not in self._int8:
                try:
                    from core.bundle.onnx_shared import shared
                    from core.training import load_label_encoder

                    store = (shared(folder) or {}).get("store")
                    if store:  # the base encoder's int8 weights it shares, fetched if need be
                        self.artifacts.path(store)

                    copy = load_int8(folder)
                    copy.anchors = load_label_encoder(path, self.device)
                    self._int8[key] = copy
                except Exception as exc:  # a broken copy, no onnxruntime: serve fp32
                    logged(
                        logger,
                        "int8 encoder of version %s unusable: %s",
                        mv.id,
                        exc,
                        level=logging.WARNING,
                    )
                    self._int8[key] = None
            self._used[key] = time.monotonic()
            return self._int8[key]

    def base_serving(self, base: str, settings: ProjectSettings) -> CachedEncoder:
        """The encoder a project that was never retrained serves with: the base encoder's int8
        copy where the int8 rule allows it (a CPU, the project's ``serve_int8``) and the copy
        passed parity (:func:`app.serving.int8.base_int8_record`), else the fp32 base, which
        needs torch."""
        record = base_int8_record(self.artifacts, base) if settings.serve_int8 else None
        if not serves_base_int8(record, settings, self.budget):
            return self.base_encoder(base)
        key = f"int8:base:{base_int8_rel(base)}"
        with self._lock:
            if key not in self._int8:
                try:
                    self._int8[key] = load_int8(self.artifacts.path(base_int8_rel(base)) / INT8_DIR)
                except Exception as exc:  # a broken copy, no onnxruntime: serve fp32
                    logged(logger, "int8 copy of %s unusable: %s", base, exc, level=logging.WARNING)
                    self._int8[key] = None
            int8 = self._int8[key]
        return int8 if int8 is not None else self.base_encoder(base)

    def version_head(self, mv: ModelVersion | None) -> MultiLabelHead | None:
        """The multi-label head stored in a model version (None when it has none)."""
        if mv is None or not mv.artifact_path:
            return None
        folder = self.artifacts.path(mv.artifact_path) / HEAD_DIR
        return load_head(folder) if folder.is_dir() else None


def _version(key: str) -> int | None:
    """The version a loaded model's key names (None: a base encoder's int8 copy, kept)."""
    part = key.split(":")[1]
    return int(part) if part.isdigit() else None


def load_bases(db: Database, models: Models) -> list[str]:
    """Load the projects' base encoders (fp32, once per process): a retrain's new version loads
    onto its base (:func:`core.training.model_io.load_trained`), and a server whose projects
    serve int8 copies had not loaded it, so the first version a retrain served answered 4.4 s
    later than the job said it served (the library's import and the base's load, in the pool's
    switch; bench.load at 1,000 questions, Intel Xeon with AMX, quiet); loaded, 1.4 s. The
    warm-up does it once the server is warm where retrains start by themselves (a deployment
    with them off pays it at its first version: its servers start with less). Returns their
    names."""
    from core.encoding.exit_gate import Exiting
    from storage.projects import list_projects

    with db.session() as s:
        bases = sorted({p.base_encoder for p in list_projects(s)})
    loaded = []
    for base in bases:
        try:
            models.base_encoder(base)
            loaded.append(base)
        except Exiting:
            raise
        except Exception:  # not installed here: its projects' versions say so when they load
            logged(logger, "could not load the base encoder %s", base)
    return loaded
