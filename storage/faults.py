"""Named fault points for crash tests.

A crash test sets ``INTENT_STUDIO_FAULT`` to the name of one point and runs a real process; when
the process reaches that point it kills itself with ``SIGKILL`` — exactly what ``kill -9`` or a power
cut does, but at a known place instead of after a guessed sleep. ``name@n`` kills it the n-th time
it gets there (an import in chunks passes its points once a chunk: ``import.before_commit@2`` is
the second chunk, with the first one committed). Unset (always, outside tests), a fault point
costs one dictionary lookup.

Example:
    >>> fault_point("import.rows_written")  # no-op unless the variable names this point
    >>> parse("import.before_commit@2"), parse("import.rows_written")
    (('import.before_commit', 2), ('import.rows_written', 1))
"""

from __future__ import annotations

import os
import signal
from collections import Counter

ENV = "INTENT_STUDIO_FAULT"

# Every point that exists, so a test cannot name one that is never reached.
POINTS = frozenset({"import.rows_written", "import.before_commit", "bulk.next_chunk"})

_reached: Counter[str] = Counter()


def parse(value: str) -> tuple[str, int]:
    """``name`` or ``name@n`` as (name, n)."""
    name, _, nth = value.partition("@")
    return name, int(nth) if nth else 1


def fault_point(name: str) -> None:
    """Kill this process at once if ``INTENT_STUDIO_FAULT`` names ``name`` (``name@n``: when it is
    reached for the n-th time)."""
    if name not in POINTS:
        raise ValueError(f"unknown fault point {name!r}")
    value = os.environ.get(ENV)
    if value is None:
        return
    wanted, nth = parse(value)
    if wanted == name:
        _reached[name] += 1
        if _reached[name] == nth:
            os.kill(os.getpid(), signal.SIGKILL)
