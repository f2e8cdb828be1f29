"""Native work (torch, ONNX Runtime) that the process's exit waits for.

A server answers in daemon threads (Gradio's workers, the live pools' head fits). When the
interpreter finalises while one of them is inside torch, CPython 3.11 ends that thread with
``pthread_exit`` as it next takes the GIL, and the forced unwind crosses a C++ ``noexcept`` frame
of libtorch: the process aborts ("terminate called without an active exception", exit 134)
instead of exiting. So every call into native model code runs inside :meth:`ExitGate.running`,
and at exit (``atexit``, after the non-daemon threads were joined) :meth:`ExitGate.close` waits
for the calls under way to return and holds every later one at the gate, in plain Python, where
ending a thread is safe.

Example:
    >>> gate = ExitGate()
    >>> with gate.running():
    ...     gate.active
    1
    >>> gate.close(timeout=1.0)
    True
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# How long an exit waits for native calls under way (one encoder chunk or training step each).
EXIT_WAIT_S = 30.0


class ExitGate:
    """Counts the native calls under way; closed at exit (see the module)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._closed = False

    @property
    def active(self) -> int:
        with self._cond:
            return self._active

    @contextmanager
    def running(self) -> Iterator[None]:
        """One native call. After :meth:`close` a new call waits here until the process ends."""
        with self._cond:
            while self._closed:
                self._cond.wait()
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    def close(self, timeout: float = EXIT_WAIT_S) -> bool:
        """Hold new calls and wait for those under way; True when none is left."""
        with self._cond:
            self._closed = True
            return self._cond.wait_for(lambda: self._active == 0, timeout)


# The process's one gate: every encoder, head and training step passes it.
NATIVE = ExitGate()
atexit.register(NATIVE.close)
