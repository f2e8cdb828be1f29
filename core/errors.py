"""No error is silent: what a broad ``except`` does with an error it did not name.

A handler that catches everything (a background warm-up, a best-effort record, a fallback to the
fp32 encoder) keeps the app alive for the failures it is there for: a server that does not
answer, a file that is not there, a model that will not export. A programming error is none of
those: an AttributeError, TypeError, KeyError or NameError is a bug in this code, and a handler
that swallowed it would fail silently (an empty tab, a fallback taken every time). So such a
handler either names the errors it expects, or calls :func:`logged` (the traceback reaches the
log, and a programming error is raised again) or :func:`raise_if_bug` (after its own clean-up or
report). ``tests/test_architecture.py`` holds every broad handler in ``app/`` to this.

Example:
    >>> import logging
    >>> try:
    ...     {}["missing"]
    ... except Exception:
    ...     logged(logging.getLogger("doc"), "the warm-up failed")
    Traceback (most recent call last):
    KeyError: 'missing'
"""

from __future__ import annotations

import logging
import sys

# Errors that say the code is wrong, not the world: never swallowed by a broad handler.
PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    AttributeError,
    TypeError,
    KeyError,
    NameError,
)


def is_bug(exc: BaseException) -> bool:
    """Whether ``exc`` is a programming error (:data:`PROGRAMMING_ERRORS`)."""
    return isinstance(exc, PROGRAMMING_ERRORS)


def raise_if_bug(exc: BaseException) -> None:
    """Raise ``exc`` again when it is a programming error; else return (the caller handles it)."""
    if is_bug(exc):
        raise exc


def logged(log: logging.Logger, message: str, *args: object, level: int = logging.ERROR) -> None:
    """Within an ``except`` block: log the error being handled with its traceback (``message``
    with ``args``, at ``level``), then raise it again when it is a programming error."""
    exc = sys.exc_info()[1]
    log.log(level, message, *args, exc_info=True)
    if exc is not None:
        raise_if_bug(exc)
