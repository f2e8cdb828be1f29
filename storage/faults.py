"""Named fault points for crash tests.

A crash test sets ``INTENT_STUDIO_FAULT`` to the name of one point and runs a real process; when
the process reaches that point it kills itself with ``SIGKILL`` — exactly what ``kill -9`` or a power
cut does, but at a known place instead of after a guessed sleep. Unset (always, outside tests), a
fault point costs one dictionary lookup.

Example:
    >>> fault_point("import.rows_written")  # no-op unless the variable names this point
"""

from __future__ import annotations

import os
import signal

ENV = "INTENT_STUDIO_FAULT"

# Every point that exists, so a test cannot name one that is never reached.
POINTS = frozenset({"import.rows_written", "import.before_commit", "import.chunk_committed"})


def fault_point(name: str) -> None:
    """Kill this process at once if ``INTENT_STUDIO_FAULT`` names ``name``."""
    if name not in POINTS:
        raise ValueError(f"unknown fault point {name!r}")
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
