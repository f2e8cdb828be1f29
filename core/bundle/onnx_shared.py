"""An int8 ONNX copy that keeps only what differs from its base encoder's copy (issue 71 item 4).

A tuned version changes only its upper layers: exported and quantised the same way, its graph's
nodes and the initializers of its token embeddings and frozen lower layers are byte for byte
those of the base encoder's int8 copy (MiniLM with 3 of 6 layers tuned: 77 of 143 initializers,
18 of 24 MB). :func:`share` drops those from the version's copy and records where they are
(``shared.json``: the base copy's folder relative to this one, its graph's sha256 and the
initializers' names); :func:`model_bytes` puts them back in memory for onnxruntime, and
:func:`materialise` writes the whole graph (a bundle carries it whole). Nothing is shared when the
base copy is missing or was quantised another way: the copy then keeps everything.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from core.bundle.onnx_encoder import CONFIG_FILE, MODEL_FILE

SHARED_FILE = "shared.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _graph(folder: Path) -> Path:
    config = json.loads((folder / CONFIG_FILE).read_text("utf-8"))
    return folder / str(config.get("model") or MODEL_FILE)


def share(folder: Path, base: Path, final: Path | None = None, store: str = "") -> int:
    """Drop from ``folder``'s int8 graph the initializers the ``base`` copy's graph holds byte
    for byte (same name, same tensor), when both graphs have the same nodes; returns the bytes
    saved (0: nothing shared, the folder unchanged). ``final``: where ``folder`` will live once
    written (a temporary folder is renamed), which the recorded relative path starts from;
    ``store``: the artifact store's name of ``base`` (recorded: a process fetches it first)."""
    import onnx

    mine_path, theirs_path = _graph(folder), _graph(base)
    if not theirs_path.is_file():
        return 0
    mine, theirs = onnx.load(str(mine_path)), onnx.load(str(theirs_path))
    same_nodes = [n.SerializeToString() for n in mine.graph.node] == [
        n.SerializeToString() for n in theirs.graph.node
    ]
    if not same_nodes:
        return 0
    known = {t.name: t.SerializeToString() for t in theirs.graph.initializer}
    keep, names, saved = [], [], 0
    for tensor in mine.graph.initializer:
        raw = tensor.SerializeToString()
        if known.get(tensor.name) == raw:
            names.append(tensor.name)
            saved += len(raw)
        else:
            keep.append(tensor)
    if not names:
        return 0
    del mine.graph.initializer[:]
    mine.graph.initializer.extend(keep)
    onnx.save(mine, str(mine_path))
    record = {
        "base": os.path.relpath(base, final or folder),
        "store": store,
        "sha256": _sha256(theirs_path),
        "initializers": names,
    }
    (folder / SHARED_FILE).write_text(json.dumps(record, indent=1), encoding="utf-8")
    return saved


def shared(folder: Path) -> dict[str, Any] | None:
    """What ``folder``'s copy shares with its base copy (None: it holds everything)."""
    path = Path(folder) / SHARED_FILE
    return dict(json.loads(path.read_text("utf-8"))) if path.is_file() else None


def model_bytes(folder: Path) -> bytes | None:
    """``folder``'s whole graph, the shared initializers put back from its base copy, for
    onnxruntime to load from memory; None when it shares nothing (load it from its file).

    Raises:
        ValueError: the base copy is missing or not the one it was shared with.
    """
    import onnx

    folder = Path(folder)
    record = shared(folder)
    if record is None:
        return None
    base = (folder / record["base"]).resolve()
    theirs_path = _graph(base) if (base / CONFIG_FILE).is_file() else base / MODEL_FILE
    if not theirs_path.is_file() or _sha256(theirs_path) != record["sha256"]:
        raise ValueError(
            f"{folder.parent.name}: the base encoder's int8 copy it shares weights with is "
            "missing or changed; its fp32 encoder serves instead."
        )
    mine, theirs = onnx.load(str(_graph(folder))), onnx.load(str(theirs_path))
    wanted = set(record["initializers"])
    mine.graph.initializer.extend(t for t in theirs.graph.initializer if t.name in wanted)
    return bytes(mine.SerializeToString())


def materialise(folder: Path, out: Path) -> Path:
    """``folder`` whole: itself when it shares nothing, else a copy in ``out`` (which must not
    exist) whose graph holds every initializer again (what a bundle carries)."""
    folder = Path(folder)
    data = model_bytes(folder)
    if data is None:
        return folder
    shutil.copytree(folder, out, ignore=shutil.ignore_patterns(SHARED_FILE))
    _graph(out).write_bytes(data)
    return out


__all__ = ["SHARED_FILE", "materialise", "model_bytes", "share", "shared"]
