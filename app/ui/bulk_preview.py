"""A bulk label as the screen shows it (the Data tab's filter, the Map's lasso): a preview that
says what will change, and a Label button that applies exactly the preview on screen.

Each preview is rendered with its token (:attr:`app.services.labelling.bulk.BulkPlan.token`, a digest of
what it would change) and kept, with the ids and the choice it counted and what the screen
showed it for, in the per-user :data:`Previews` state. Pressing Label sends the token of the
preview the page shows at that moment, read from the page (:func:`token_js`), never the last
one the server computed, with what the screen shows then: it labels exactly what the person
saw, or nothing. While a preview is being counted the page has no token and the button says so
(``assets/bulk_preview.js``); a click then, an unknown token, a screen that shows something
else than the preview was counted for (a filter typed but not submitted), or rows that changed
since (someone labelled one) refuse, change nothing and show the preview again.
"""

from __future__ import annotations

import html
import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

import assets
from app.access import ProjectHandle
from app.services.labelling import bulk as bulk_svc
from app.ui.common import attempt, ok, problem
from storage.db import Database

Previews = dict[str, dict[str, Any]]  # token -> {"ids", "target", "relabel"}
KEPT = 8  # previews kept per user (a click crossing a newer preview still finds its own)
_RENDERS = itertools.count(1)


def token_js(preview_id: str) -> str:
    """The Label click's ``js``: its last input becomes the token of the preview the page shows
    now (``""`` while one is being counted, or none)."""
    return (
        "(...args) => { const t = document.querySelector("
        f"'#{preview_id} [data-token]'); args[args.length - 1] = t ? t.dataset.token : ''; "
        "return args; }"
    )


def counting_js(preview_id: str, button_id: str) -> str:
    """A filter or selection changed: the preview on screen is no longer what Label would do
    (client side, at once: see ``assets/bulk_preview.js``)."""
    return f"() => {{ window.__studioCounting?.('{preview_id}', '{button_id}'); return []; }}"


def ask_js(preview_id: str) -> str:
    """A recount's ``js``: its last input becomes the number of the recount the page asked for
    last (``assets/bulk_preview.js``), which the preview it brings carries (``data-ask``): a
    preview counted for an earlier one, come late, gives the page no token back."""
    return f"(...args) => [...args.slice(0, -1), window.__studioAsk?.('{preview_id}') ?? 0]"


def page_js(*watches: str) -> str:
    """The page load's ``js``: the previews' handler (``assets/bulk_preview.js``), then each of
    ``watches`` (:func:`watch_js`), in this order."""
    calls = "".join(f"({w})();" for w in (assets.text("bulk_preview.js").strip(), *watches))
    return f"() => {{ {calls} return []; }}"


def watch_js(
    preview_id: str, button_id: str, widgets: Sequence[str], submits: Sequence[str] = ()
) -> str:
    """The page load's ``js`` that has the page hold the preview back the moment one of the
    ``widgets`` it is counted for (their elem_ids) shows another value, or Enter applies the
    text of one of ``submits`` (``assets/bulk_preview.js``, loaded first)."""
    roots = json.dumps([f"#{w}" for w in widgets])
    boxes = json.dumps([f"#{w}" for w in submits])
    return (
        f"() => {{ window.__studioWatchPreview?.('{preview_id}', '{button_id}', {roots}, "
        f"{boxes}); return []; }}"
    )


def shown(plan: bulk_svc.BulkPlan | None, text: str = "", ask: float | None = None) -> str:
    """The preview as the page shows it: the plan's sentence carrying its token (or ``text``
    alone, with no token: nothing Label could apply), and ``ask``, the number of the page's
    recount it answers (:func:`ask_js`; None: the page's last). Every render differs
    (``data-seq``): the page redraws even a preview equal to the last, and so gets its token
    back."""
    seq = next(_RENDERS)
    asked = "" if ask is None else f" data-ask='{int(ask)}'"
    if plan is None:
        return f"<div class='bulk-plan' data-seq='{seq}'{asked}>{text}</div>"
    return (
        f"<div class='bulk-plan' data-seq='{seq}'{asked} data-token='{plan.token}'>"
        f"{html.escape(plan.summary())}</div>"
    )


def preview(
    db: Database,
    p: ProjectHandle | None,
    ids: Sequence[int],
    target: str | None,
    relabel: bool,
    previews: Previews | None,
    counted_for: Any = None,
    ask: float | None = None,
) -> tuple[str, Previews]:
    """What Label would do to ``ids``, before anything changes: (the preview, the previews kept
    with this one). ``counted_for``: what the screen shows it for (the filters or the selection,
    the intent and the choice), which a Label press must still show; ``ask``: the page's
    recount it answers (:func:`shown`)."""
    kept = dict(previews or {})
    if p is None or not ids or not target:
        return shown(None, ask=ask), kept
    plan, err = attempt(
        lambda: bulk_svc.plan_label(db, p, list(ids), [target], relabel_labelled=relabel)
    )
    if err or plan is None:
        return shown(None, problem(err or ""), ask), kept
    kept[plan.token] = {
        "ids": list(ids),
        "target": target,
        "relabel": bool(relabel),
        "for": counted_for,
    }
    return shown(plan, ask=ask), dict(list(kept.items())[-KEPT:])


Recount = Callable[[Previews], tuple[str, Previews]]


def apply(
    db: Database,
    p: ProjectHandle,
    token: str | None,
    previews: Previews | None,
    showing: Any,
    recount: Recount,
) -> tuple[str, str | Any, Previews]:
    """Label exactly the preview whose ``token`` the page showed, as one batch: (the result, the
    preview to show now, the previews kept). ``showing``: what the screen shows now (as
    ``counted_for`` of :func:`preview`); ``recount``: the preview of that. Refused, changing
    nothing: no token (a preview being counted: it shows when counted; or a refusal, such as an
    unknown intent, which the preview counted again shows); then, with the preview counted
    again, a token this session never showed, a screen that shows something else now (a filter
    typed, another selection), or rows that changed since it was counted."""
    kept = dict(previews or {})
    asked = kept.get(token or "")
    if not token:
        again, kept = recount(kept)
        if "data-token" not in again:  # a refusal (an unknown intent): the preview says why
            return problem("Nothing was labelled: the preview says why.", notify=False), again, kept
        return (  # the button said so: a toast would only repeat it
            problem(
                "The preview is still being counted: nothing was labelled. Check it when it "
                "shows, then press Label again.",
                notify=False,
            ),
            gr.update(),
            kept,
        )
    if asked is None or asked["for"] != showing:
        again, kept = recount(kept)
        return (
            problem(
                "What the screen shows changed since the preview (the filters, the selection, "
                "the intent or the choice): nothing was labelled. Check the new preview, then "
                "press Label again."
            ),
            again,
            kept,
        )
    done, err = attempt(
        lambda: bulk_svc.label_many(
            db,
            p,
            asked["ids"],
            [asked["target"]],
            relabel_labelled=asked["relabel"],
            token=token,
        )
    )
    if err or done is None:
        again, kept = recount(kept)
        return problem(err or ""), again, kept
    kept.pop(token, None)  # applied: a second press of the same preview labels nothing
    left = (
        f" Left {len(done.labelled)} already labelled as they were."
        if done.labelled and not done.relabel_labelled
        else ""
    )
    protected = (
        f" Left {len(done.protected)} you may not change now as they were."
        if done.protected
        else ""
    )
    undo = " One Undo reverts the whole batch." if done.change else ""
    message = ok(
        f"Labelled {len(done.change)} utterance(s) as {done.target_text}.{left}{protected}{undo}"
    )
    return message, shown(None), kept
