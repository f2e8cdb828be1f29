"""Versions with real files in the real artifact store, registered in the real database, as a
retrain registers them (their artifact, its hash and its bytes; an int8 copy of their own), for
the tests of what the retention rule keeps: the rule reads rows and removes folders, it loads no
model."""

from __future__ import annotations

import os
from typing import Any

from storage.artifacts import tree_sha256
from storage.versions import NewVersion, register_version


def write_artifact(store: Any, rel: str, size: int) -> tuple[str, int]:
    """A folder of ``size`` random bytes under ``rel``, written as a retrain writes one; its
    hash and bytes."""
    with store.writing(rel) as folder:
        (folder / "model.safetensors").write_bytes(os.urandom(size))
        (folder / "model.json").write_text("{}")
    return tree_sha256(store.path(rel))


def add_version(
    serving_state: Any,
    project_id: int,
    n: int,
    *,
    size: int = 10_000,
    int8: int = 0,
    trigger: str = "manual",
    passed: bool = True,
    activate: bool = False,
) -> int:
    """Register a version of ``project_id`` whose artifact holds ``size`` random bytes, with an
    int8 copy of its own of ``int8`` bytes (0: none); ``trigger`` and ``passed`` as its retrain
    records them (an automatic one the gate did not promote: ``trigger="auto", passed=False``)."""
    rel = f"projects/{project_id}/models/test-{n}"
    sha, total = write_artifact(serving_state.artifacts, rel, size)
    metrics: dict[str, Any] = {"accuracy": 0.9, "split": "test", "gate": {"passed": passed}}
    if int8:
        write_artifact(serving_state.artifacts, f"{rel}-int8", int8)
        metrics["int8"] = {"passed": True, "artifact": f"{rel}-int8", "size_mb": 0.0}
    if trigger != "manual":
        metrics["trigger"] = trigger
    new = NewVersion(project_id, None, "convfit", "minilm", {}, metrics, rel, sha, total)
    with serving_state.db.write() as s:
        return register_version(s, new, activate=activate)
