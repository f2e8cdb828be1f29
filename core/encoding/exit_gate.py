"""Native work (torch, ONNX Runtime) that the process's exit waits for.

A server answers in daemon threads (Gradio's workers, the live pools' head fits). When the
interpreter finalises while one of them is inside torch, CPython 3.11 ends that thread with
``pthread_exit`` as it next takes the GIL, and the forced unwind crosses a C++ ``noexcept`` frame
of libtorch: the process aborts ("terminate called without an active exception", exit 134)
instead of exiting. So every call into native model code runs inside :meth:`ExitGate.running`,
and an exit closes the gate (:meth:`ExitGate.close`): it waits for the calls under way to return,
and every later call is refused with :class:`Exiting`, raised in plain Python before it enters
native code. A refused thread unwinds and ends (a request's thread that waited behind a
warm-up ends too, instead of holding the exit: issue 57's 120 s stop). An entry point closes the
gate once its own threads are joined (``app.cli.common.leave_process``); ``atexit`` closes it
for every other process (after the non-daemon threads were joined).

Example:
    >>> gate = ExitGate()
    >>> with gate.running():
    ...     gate.active
    1
    >>> gate.close(timeout=1.0)
    True
    >>> with gate.running():  # doctest: +IGNORE_EXCEPTION_DETAIL
    ...     pass
    Traceback (most recent call last):
    ...
    core.encoding.exit_gate.Exiting: the process is exiting: no new model work starts
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# How long an exit waits for native calls under way (one encoder chunk or training step each).
EXIT_WAIT_S = 30.0


class Exiting(RuntimeError):
    """A native call asked for after the process's exit began (see the module)."""

    def __init__(self) -> None:
        super().__init__("the process is exiting: no new model work starts")


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

    @property
    def closed(self) -> bool:
        """Whether the exit began: a thread that loops on native work stops quietly."""
        with self._cond:
            return self._closed

    @contextmanager
    def running(self) -> Iterator[None]:
        """One native call; after :meth:`close` it raises :class:`Exiting` instead."""
        with self._cond:
            if self._closed:
                raise Exiting()
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    def close(self, timeout: float = EXIT_WAIT_S) -> bool:
        """Refuse new calls and wait for those under way; True when none is left."""
        with self._cond:
            self._closed = True
            return self._cond.wait_for(lambda: self._active == 0, timeout)


# The process's one gate: every encoder, head and training step passes it.
NATIVE = ExitGate()
atexit.register(NATIVE.close)
