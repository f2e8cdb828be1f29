"""Maps projected in a process of their own: ``python -m core.projection_worker`` answers
requests read from its standard input, one at a time, pickled (its parent is the only writer).

Why a process: UMAP's numba epochs hold the GIL for seconds at a time, and a server that ran
them in a thread slowed every request meanwhile. Measured on BANKING77 (3,770 rows): the Map's
second call while the first one's UMAP ran took 17.9 s, 15.7 s of them in fetching the
project's rows from SQLite, whose module gives the GIL back at every row (a GIL convoy).

Requests are ``("project", {"vectors": ..., "method": ...})`` or ``("warm_up", {"large": ...})``;
the answer is ``("ok", value)`` or ``("error", message)``. The worker ends when its input ends,
and when its parent is gone even in the middle of a request (:func:`exit_with_parent`: a server
stopped or killed while its warm-up compiled UMAP's kernels left the child compiling for up to
half a minute, a core taken from whatever ran next). It ignores
SIGINT: a terminal's Ctrl+C reaches every process of the server's group, and the server, not
the keyboard, decides when its maps stop (it died with a KeyboardInterrupt traceback on the
server's terminal, before the server had begun to stop).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
from typing import Any, BinaryIO

from core.projection import project, warm_up


def answer(kind: str, payload: dict[str, Any]) -> tuple[str, Any]:
    """The answer to one request (never raises for a bad request: it says so)."""
    try:
        if kind == "project":
            return "ok", project(payload["vectors"], payload["method"])
        if kind == "warm_up":
            return "ok", warm_up(large=bool(payload.get("large", True)))
        return "error", f"unknown request {kind!r}"
    except (ValueError, KeyError, TypeError) as exc:
        return "error", f"{type(exc).__name__}: {exc}"


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer requests until ``requests`` ends (or the answers can no longer be sent)."""
    while True:
        try:
            kind, payload = pickle.load(requests)
        except EOFError:
            return
        try:
            pickle.dump(answer(kind, payload), answers)
            answers.flush()
        except (BrokenPipeError, OSError):
            return


def exit_with_parent(parent: int, every: float = 0.5) -> None:
    """End this process once ``parent`` is no longer its parent (it exited or was killed, and
    this process was handed to another); run in a daemon thread. A request under way is
    dropped: nobody is left to read its answer."""
    while os.getppid() == parent:
        time.sleep(every)
    os._exit(0)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # its server decides: its input ends
    threading.Thread(target=exit_with_parent, args=(os.getppid(),), daemon=True).start()
    # The answers get standard output to themselves: anything a library prints goes to stderr.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
