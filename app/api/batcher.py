"""Micro-batching for one-line requests: concurrent callers share one encoder pass.

While one batch runs (in a worker thread, off the event loop), the requests that arrive wait; when
it ends they go together as the next batch, at most ``max_batch`` at a time. Nobody waits for a
timer: a lone request runs at once, and under load the batches grow by themselves. This is what
Gradio's ``batch=True`` does for its ``/predict`` endpoint, for the REST API's predict.

Fair across callers: each request may name its caller (``key``), and a batch takes the waiting
callers in turns (one request of each, then a second of each...), so a caller with many requests
waiting never pushes another's past the next batch.

Example:
    >>> import asyncio
    >>> batcher = MicroBatcher(lambda items: [x * 2 for x in items])
    >>> async def three():
    ...     return await asyncio.gather(*(batcher.submit(i) for i in (1, 2, 3)))
    >>> asyncio.run(three()), batcher.sizes  # the three arrived together: one batch
    ([2, 4, 6], [3])
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class MicroBatcher(Generic[T, R]):
    """Runs ``run`` (a list of items -> a list of results, same order) on batches of the items
    submitted concurrently, one batch at a time."""

    def __init__(self, run: Callable[[list[T]], list[R]], max_batch: int = 64) -> None:
        self.run = run
        self.max_batch = max_batch
        self.sizes: list[int] = []  # every batch's size, for tests and benchmarks (last 1,000)
        self._pending: list[tuple[T, asyncio.Future[R], object]] = []  # (item, future, key)
        self._draining = False
        self._task: asyncio.Task[None] | None = None  # the drain running now (kept referenced)

    async def submit(self, item: T, key: object = None) -> R:
        """The result of ``item``, computed in a coming batch (raises what ``run`` raised);
        ``key``: the caller, for taking callers in turns."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future, key))
        if not self._draining:
            self._draining = True
            self._task = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._pending:
                batch = self._next_batch()
                self.sizes = [*self.sizes[-999:], len(batch)]
                try:
                    results = await asyncio.to_thread(self.run, [item for item, _, _ in batch])
                except Exception as exc:  # the whole batch failed: each caller gets the error
                    for _, future, _ in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, future, _), result in zip(batch, results, strict=True):
                    if not future.done():  # a caller that went away (cancelled) is skipped
                        future.set_result(result)
        finally:
            self._draining = False

    def _next_batch(self) -> list[tuple[T, asyncio.Future[R], object]]:
        """Up to ``max_batch`` waiting requests, the callers in turns (arrival order within a
        caller and among the first requests of each), taken off the waiting list."""
        rounds: dict[object, int] = {}
        ranked = []
        for i, entry in enumerate(self._pending):
            turn = rounds[entry[2]] = rounds.get(entry[2], -1) + 1
            ranked.append((turn, i))
        chosen = sorted(i for _, i in sorted(ranked)[: self.max_batch])
        batch = [self._pending[i] for i in chosen]
        taken = set(chosen)
        self._pending = [e for i, e in enumerate(self._pending) if i not in taken]
        return batch
