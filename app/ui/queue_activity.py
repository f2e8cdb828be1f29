"""The Label tab's work, told to the automatic retrains (issue 71 item 2: "quiet" means nobody
works, not merely no label for a few seconds). A card asked for holds their quiet spell until it
shows (:func:`holding` wraps the tab's card handlers), and the page's keys, typing an intent's
name included, say so at most every 2 s (assets/queue_keys.js presses the hidden button
:data:`ALIVE_ID`, :func:`seen`). Both go to the server's
:class:`app.perimeter.in_use.Working`, which writes the project's last work where every worker
reads it. Only those who may label hold it (a viewer's page holds nothing)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import LABEL
from app.perimeter.in_use import Working
from app.ui.common import bind
from core.encoding.fair_share import SHARED
from storage.db import Database

ALIVE_ID = "queue-alive"  # the hidden button the page presses at its keys

F = TypeVar("F", bound=Callable[..., Any])


def _working(p: Any) -> bool:
    return isinstance(p, ProjectHandle) and p.may(LABEL.role)


def holding(work: Working) -> Callable[[F], F]:
    """A wrapper for a card handler (its project an argument annotated
    :class:`app.access.ProjectHandle`, as :func:`app.ui.guard.guarded` resolves it): while it
    runs, a card is asked for and not yet shown; once it returns, a card is shown. Meanwhile the
    process's background waits for it (:meth:`core.encoding.fair_share.Turns.person`)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def held(*args: Any) -> Any:
            with SHARED.person():
                p = next((a for a in args if _working(a)), None)
                if p is None:
                    return fn(*args)
                with work.card(p.id):
                    return fn(*args)

        return held  # type: ignore[return-value]

    return wrap


def seen(work: Working, p: ProjectHandle | None) -> None:
    """A key in the Label tab (the page's word, at most every 2 s)."""
    if _working(p):
        assert p is not None
        work.touch(p.id)


def follow_work(db: Database, project: gr.Dropdown) -> Callable[[F], F]:
    """Lay out the hidden button the page presses at its keys (where it is called) and bind it;
    returns the wrapper of the card handlers (:func:`holding`)."""
    work = Working(db)
    alive = gr.Button("alive", elem_id=ALIVE_ID, elem_classes=["hidden-trigger"])
    alive.click(
        bind(seen, work),
        [project],
        [],
        show_progress="hidden",
        api_visibility="private",
        trigger_mode="always_last",
    )
    return holding(work)
