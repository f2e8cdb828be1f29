"""The Label tab's model line: which version serves and its accuracy, "improving…" while a retrain
(an automatic one included) runs, with a link to its progress in the Train tab, and, once another
model starts serving, what changed in one line (accuracy before → after). Its words are
:mod:`app.services.training.serving_now`'s. It ends with the automatic retrain's switch ("Retrain by
itself after 20 new labels: on"), a link to it in the Train tab (issue 75 item 1).

A timer polls the stored state's stamp every :data:`POLL_S` seconds (one cheap read) and draws the
line again only when it moved. The line carries the model that serves (``data-model``); when it
changes, the page (assets/queue_model.js) asks for the card's suggestions again through the
queue's own one-answer-at-a-time path (a key pressed meanwhile waits for them) and redraws a Map
already drawn: both follow without a reload.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import gradio as gr

import assets
from app.access import ProjectHandle
from app.services.projects.settings import switch_words
from app.services.queue import queue as queue_svc
from app.services.training import serving_now as svc
from app.serving.live import LivePools
from app.serving.training_queue import TrainingQueue
from app.ui.common import attempt, bind
from app.ui.queue_view import QueueSession, QueueView, render

POLL_S = 5.0  # how often the page looks at what serves
RESCORE_ID = "queue-rescore"  # the hidden button that asks for the card's suggestions again
SWITCH_ID = "train-auto-retrain"  # the switch the line links to (app/ui/train/auto_switch.py)


@dataclass(frozen=True)
class Seen:
    """What the page's line was drawn from: the stamp, what served, and what changed last."""

    stamp: tuple[Any, ...]
    now: svc.Serving
    changed: str = ""
    switch: str = ""  # the automatic retrain's switch, as the line said it


def model_html(now: svc.Serving, changed: str = "", switch: str = "") -> str:
    """The model line (user text escaped): what serves, "improving…" and a link to the Train
    tab while a retrain is active, the automatic retrain's ``switch`` as a link to it, and the
    line of what changed last.

    Example:
        >>> now = svc.Serving(1, 8, "1:8:bb", 0.804, 0.7, (25, 100), None)
        >>> line = model_html(now, "v8 (first pass) now serves: accuracy 70.0 % → 80.4 %")
        >>> "data-model='1:8:bb'" in line, "v8 (first pass) · accuracy 80.4 %" in line
        (True, True)
        >>> switch = "Retrain by itself after 20 new labels: on"
        >>> f"class='queue-model-switch'>{switch}</a>" in model_html(now, switch=switch)
        True
    """
    improving, kept = svc.improving_words(now), svc.kept_words(now)
    parts = [f"Serving <b>{html.escape(svc.serving_words(now))}</b>"]
    if improving:
        parts.append(
            f"<span class='queue-improving'>{html.escape(improving)}</span> · "
            "<a href='#' data-tab='Train' class='queue-model-progress'>progress ›</a>"
        )
    elif kept:  # why the labels given did not change the model
        parts.append(f"<span class='queue-kept'>{html.escape(kept)}</span>")
    if switch:  # where the retrains are switched on or off (the Train tab's Retrain section)
        parts.append(
            f"<a href='#' data-tab='Train' data-focus='{SWITCH_ID}' class='queue-model-switch'>"
            f"{html.escape(switch)}</a>"
        )
    said = f"<div class='queue-model-change'>✓ {html.escape(changed)}</div>" if changed else ""
    model = html.escape(now.model, quote=True)
    return f"<div data-model='{model}'>{' · '.join(parts)}{said}</div>"


def tick(
    training: TrainingQueue, live: LivePools, p: ProjectHandle | None, seen: Seen | None
) -> tuple[Any, Seen | None]:
    """The timer's look: the line again only when the stamp moved (else nothing is sent), with
    what changed once another model serves the same project."""
    if p is None:
        return "", None
    stamp, err = attempt(lambda: svc.stamp(training.db, p))
    if err or stamp is None:
        return gr.skip(), seen
    switch = switch_words(p.settings, live.auto_retrain)  # the project's handle: no query
    if seen is not None and seen.stamp == stamp and seen.switch == switch:
        return gr.skip(), seen
    now, err = attempt(lambda: svc.serving_now(training, p))
    if err or now is None:
        return gr.skip(), seen
    changed = ""
    if seen is not None and seen.now.project_id == now.project_id:
        changed = svc.what_changed(seen.now, now) or seen.changed
    return model_html(now, changed, switch), Seen(stamp, now, changed, switch)


def rescore(live: LivePools, p: ProjectHandle | None, state: QueueSession) -> QueueView:
    """The card on screen with the suggestions of the model that serves now (the same
    utterance: what comes after it is scored as it comes). A card listed for a dispute keeps
    its answers' order; a card someone answered meanwhile stays for the next answer to
    replace. The status line keeps what the last answer said ("Undid: #12 …"): a refresh is
    no answer of the designer's."""
    return _rescored(live, p, state)._replace(message=gr.skip())


def _rescored(live: LivePools, p: ProjectHandle | None, state: QueueSession) -> QueueView:
    item = state.item
    if p is None or item is None or state.how in (queue_svc.DISPUTES, queue_svc.MINE):
        return render(live.db, p, state)
    fresh, _ = attempt(
        lambda: queue_svc.item(live, p, item.id, review=state.how == queue_svc.REVIEW)
    )
    if fresh is None:
        return render(live.db, p, state)
    picked = state.picked if fresh.multi_label else ()
    return render(live.db, p, state.but(item=fresh, picked=picked))


def model_line() -> gr.HTML:
    """The line, laid out where it is called (the tab's top row)."""
    return gr.HTML("", elem_id="queue-model")


def follow_model(
    line: gr.HTML,
    training: TrainingQueue,
    live: LivePools,
    project: gr.Dropdown,
    state: gr.State,
    outputs: list[Any],
) -> tuple[Any, list[Any], list[Any]]:
    """Bind the line's timer and the card's refresh; ``outputs``: the tab's outputs
    (:class:`app.ui.queue_view.QueueView`). Returns the first look (to run on load)."""
    seen = gr.State(None)
    timer = gr.Timer(POLL_S)
    again = gr.Button("rescore", elem_id=RESCORE_ID, elem_classes=["hidden-trigger"])
    quiet: dict[str, Any] = {"show_progress": "hidden", "api_visibility": "private"}
    look = bind(tick, training, live)
    timer.tick(look, [project, seen], [line, seen], **quiet)
    first = (look, [project, gr.State(None)], [line, seen])
    project.change(*first, **quiet)
    again.click(bind(rescore, live), [project, state], outputs, trigger_mode="multiple", **quiet)
    return first


def model_js() -> str:
    """The page's side (assets/queue_model.js)."""
    return assets.text("queue_model.js").replace("__RESCORE__", RESCORE_ID)
