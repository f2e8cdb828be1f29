"""A step that may take long says so while it runs: every :data:`EVERY` seconds, one line of what
it is doing and for how long (``  … building the app's pages: 1 min 00 s so far``), so no
stretch of a start is silent for more than that (issue 65: ``make run`` printed "Building the
app's pages…" and then nothing for 11 minutes on a busy machine).

The lines come from a small helper process, not a thread: loading torch holds the interpreter's
lock for a minute on a loaded machine (its libraries' initialisers run under it), and a thread
would wait for it, silent. The helper writes to this process's standard output and ends when the
step does (its standard input closes), or when this process ends. Standard library only: it
runs before the heavy imports it reports on.

Example:
    >>> with ticking("counting", every=0.05):
    ...     pass
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

EVERY = 30.0

# The helper: a line every EVERY seconds until its standard input closes.
_BEATS = """
import select, sys, time
what, every = sys.argv[1], float(sys.argv[2])
start = time.monotonic()
while not select.select([sys.stdin], [], [], every)[0]:
    s = int(time.monotonic() - start)
    took = f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"
    print(f"  \\u2026 {what}: {took} so far", flush=True)
"""


@contextmanager
def ticking(what: str, *, every: float = EVERY) -> Iterator[None]:
    """While the block runs, say ``what`` it is doing every ``every`` seconds."""
    sys.stdout.flush()  # what this process said before comes first
    beats = subprocess.Popen(
        [sys.executable, "-S", "-c", _BEATS, what, str(every)], stdin=subprocess.PIPE
    )
    try:
        yield
    finally:
        assert beats.stdin is not None
        beats.stdin.close()
        beats.wait()
