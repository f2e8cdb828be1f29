"""A step that may take long says so while it runs: every :data:`EVERY` seconds, one line of what
it is doing and for how long (``  … building the app's pages: 1 min 00 s so far``), so no
stretch of a start is silent for more than that (issue 65: ``make run`` printed "Building the
app's pages…" and then nothing for 11 minutes on a busy machine). Standard library only: it runs
before the heavy imports it reports on.

Example:
    >>> with ticking("counting", every=0.05, say=lambda line: None):
    ...     pass
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

EVERY = 30.0


def span(seconds: float) -> str:
    """``95`` → ``"1 min 35 s"``.

    Example:
        >>> span(8.4), span(95), span(3600)
        ('8 s', '1 min 35 s', '60 min 00 s')
    """
    s = int(seconds)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def _print(line: str) -> None:
    print(line, flush=True)


@contextmanager
def ticking(
    what: str, *, every: float = EVERY, say: Callable[[str], None] = _print
) -> Iterator[None]:
    """While the block runs, say ``what`` it is doing every ``every`` seconds (from a daemon
    thread, so a block that never ends never keeps the process alive)."""
    start = time.monotonic()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(every):
            say(f"  … {what}: {span(time.monotonic() - start)} so far")

    thread = threading.Thread(target=beat, name=f"ticking: {what}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
