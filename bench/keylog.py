"""The server's side of each Gradio event, written by a server the bench starts: how long each
event took from its arrival in Gradio's queue (``/gradio_api/queue/join``) to its answer being
handed to the page's stream, one JSON line per event.

A bench cannot call the app in its own process to time a key while a retrain runs in the
server's worker (the worker is another process); this hook times the keys inside the server
that serves them. :func:`sitecustomize` writes a ``sitecustomize.py`` that loads this file by
its path (so it also works in a peer's checkout, whose ``bench`` package has no such module)
and calls :func:`install`, which patches ``gradio.queueing`` when the server imports it, only
where ``INTENT_STUDIO_BENCH_KEYLOG`` names the file to write. It adds a few microseconds per
event and changes nothing else.

Each line: ``t`` (the wall clock at the answer), ``fn`` (the event's function), ``server_ms``
(queue arrival to answer: waiting in the queue and running) and ``run_ms`` (running, as Gradio
measured it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ENV = "INTENT_STUDIO_BENCH_KEYLOG"


def sitecustomize(folder: Path) -> Path:
    """Write ``folder/sitecustomize.py`` (put ``folder`` first on a server's ``PYTHONPATH``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import importlib.util as _u\n"
        f"_s = _u.spec_from_file_location('_bench_keylog', {str(Path(__file__).resolve())!r})\n"
        "_m = _u.module_from_spec(_s)\n"
        "_s.loader.exec_module(_m)\n"
        "_m.install()\n"
    )
    return folder


def _patch(queueing: ModuleType, path: str) -> None:
    out = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - the server's lifetime
    send = queueing.Queue.send_message

    def send_message(self: Any, event: Any, message: Any) -> Any:
        if type(message).__name__ == "ProcessCompletedMessage":
            output = message.output if isinstance(message.output, dict) else {}
            run = output.get("duration")
            line = {
                "t": time.time(),
                "fn": getattr(event.fn, "name", None),
                "server_ms": round((time.monotonic() - event.enqueue_time) * 1000, 2),
                "run_ms": round(run * 1000, 2) if isinstance(run, int | float) else None,
                "ok": bool(message.success),
            }
            out.write(json.dumps(line) + "\n")
        return send(self, event, message)

    queueing.Queue.send_message = send_message


class _Finder(importlib.abc.MetaPathFinder):
    """Patches ``gradio.queueing`` once it is imported."""

    def __init__(self, path: str) -> None:
        self.path = path

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "gradio.queueing":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            _patch(module, self.path)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Patch the server's Gradio queue when it loads (where :data:`ENV` is set)."""
    path = os.environ.get(ENV)
    if path and "gradio.queueing" not in sys.modules:
        sys.meta_path.insert(0, _Finder(path))


def read(path: Path, since: float, until: float) -> list[dict[str, Any]]:
    """The events answered between two wall-clock times."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if since <= r["t"] <= until]
