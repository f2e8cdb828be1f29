"""A writer that waits out a model store that does not answer, instead of giving up at once
(issue 73 item 14: a bucket refusing for 33 s failed the retrain whose upload met it, 40 s of
training thrown away, while the API's own calls answered 503 and recovered).

:func:`patiently` runs a call again while it raises :class:`storage.errors.ArtifactsUnavailable`:
after :data:`FIRST_RETRY_S`, then twice as long each time (at most :data:`MAX_RETRY_S` apart),
for as long as its :class:`Patience` allows; then the last error passes on, as it does at once
without patience. The store applies it to a version's write
(:meth:`storage.remote_artifacts.RemoteArtifactStore.patient`).

Example:
    >>> tries = []
    >>> def flaky() -> str:
    ...     tries.append(1)
    ...     if len(tries) < 3:
    ...         raise ArtifactsUnavailable("s3://b") from ConnectionRefusedError()
    ...     return "uploaded"
    >>> said = []
    >>> patiently(flaky, Patience(10.0, tell=said.append), "the upload", first=0.01)
    'uploaded'
    >>> len(tries), said[0].split(":")[0]
    (3, 'the model store is not answering (ConnectionRefusedError)')
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from storage.errors import ArtifactsUnavailable

logger = logging.getLogger(__name__)

# The first try again comes this many seconds after a failure, each wait twice the one before,
# at most MAX_RETRY_S apart.
FIRST_RETRY_S = 1.0
MAX_RETRY_S = 15.0

R = TypeVar("R")


def _nothing(*_: object) -> None:
    return None


@dataclass(frozen=True)
class Patience:
    """How long a writer waits for a store that does not answer: ``seconds`` in all; ``tell``
    gets a line at each wait (a job's log); ``stop`` is called every half second of a wait and
    raises to end it (a job cancelled, its worker stopping): that exception passes on."""

    seconds: float
    tell: Callable[[str], None] = _nothing
    stop: Callable[[], None] = _nothing


def patiently(
    call: Callable[[], R], patience: Patience | None, what: str, *, first: float = FIRST_RETRY_S
) -> R:
    """``call()``, tried again while the store does not answer, as ``patience`` allows (None:
    not again); ``what``: the call in a few words, for the lines said while it waits."""
    began, delay = time.monotonic(), first
    while True:
        try:
            return call()
        except ArtifactsUnavailable as exc:
            waited = time.monotonic() - began
            if patience is None or waited >= patience.seconds:
                raise
            delay = min(delay, patience.seconds - waited)
            why = type(exc.__cause__).__name__ if exc.__cause__ is not None else "no answer"
            line = (
                f"the model store is not answering ({why}): {what} is tried again in {delay:.0f} s "
                f"(waited {waited:.0f} s of {patience.seconds:.0f})"
            )
            logger.warning("%s: %s", exc.where, line)
            patience.tell(line)
            end = time.monotonic() + delay
            while (left := end - time.monotonic()) > 0:
                patience.stop()
                time.sleep(min(0.5, left))
            delay = min(2 * delay, MAX_RETRY_S)
