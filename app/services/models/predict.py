"""Predictions explained by their nearest labelled neighbours, from the project's live pool.

Every call is checked against the caller's limits and admitted (or refused as busy) by
:attr:`app.serving.live.LivePools.admission` before it touches the encoder; ``who`` is the acting
user (by default the one the call runs as, :func:`app.access.auth.current_actor`).

A question may come with its context (the turn before it). In a project that encodes context
(the ``encode_context`` setting) the question is encoded after it, as the pool's examples
are; its prediction then carries ``context`` and ``context_used: true``. Elsewhere the context is
ignored and the prediction says so (``context_used: false``)."""

from __future__ import annotations

import time
from typing import Any

from app.access import ProjectHandle
from app.access.auth import Actor, current_actor
from app.limits import MAX_K
from app.serving.admission import BusyError
from app.serving.live import LivePools
from app.serving.pools import ProjectPool
from core.encoding.previous_turn import with_context
from core.retrieval.explain import explain
from core.retrieval.knn import Prediction
from storage.errors import StorageError
from storage.ids import whole_number
from storage.texts import validate_context

# A request of the micro-batch: (project, text, k) or (project, text, k, context).
Request = tuple[ProjectHandle, str, int] | tuple[ProjectHandle, str, int, str]


def _classify(
    live: LivePools,
    p: ProjectHandle,
    texts: list[str],
    k: int,
    show: int,
    who: Actor | None,
    *,
    lines: bool = False,
    contexts: list[str] | None = None,
) -> tuple[ProjectPool, list[tuple[dict[str, Any], Prediction]]]:
    """The project's pool and its predictor on ``texts``: each public dict with the k-NN
    prediction behind it.
    ``lines``: the texts are one-line requests of several callers (the API's micro-batch);
    ``contexts``: the turn before each text (``""``: none)."""
    who = who or current_actor()
    k = whole_number(k, "number of examples per intent (k)", high=MAX_K)
    clean = [t.strip() for t in texts]
    if not clean or any(not t for t in clean):
        raise ValueError("Type an utterance to classify.")
    turns = _contexts(contexts, len(clean))
    live.admission.limits.check_call(who.role, clean)
    with live.admission.admit(who.name, len(clean), lines=lines):
        pool = live.pool(p.id, stamp=p.stamp)  # read with the project, when it was
        if len(pool.index) == 0:
            raise ValueError(
                "This project has no labelled training utterances yet: label a few first."
            )
        asked = [_Asked(t, c) for t, c in zip(clean, turns, strict=True)]
        results = pool.predictor.predict_with_evidence(
            [pool.text_of(a) for a in asked], k=k, show=show
        )
        for (row, _), a in zip(results, asked, strict=True):
            _show_context(row, a, pool)
        return pool, results


class _Asked:
    """A question and the turn before it (what :meth:`ProjectPool.text_of` reads)."""

    def __init__(self, text: str, context: str) -> None:
        self.text, self.context = text, context


def _contexts(contexts: list[str] | None, n: int) -> list[str]:
    """Each question's context, checked by the rule of the stored ones (``""``: none)."""
    if contexts is None:
        return [""] * n
    if len(contexts) != n:
        raise ValueError(
            f"{n} utterance(s) but {len(contexts)} context(s): send one per utterance."
        )
    try:
        return [validate_context(c) for c in contexts]
    except StorageError as exc:
        raise ValueError(str(exc)) from None


def _show_context(row: dict[str, Any], asked: _Asked, pool: ProjectPool) -> None:
    """The prediction names the question as asked, and its context when it had one."""
    row["text"] = asked.text
    if asked.context:
        row["context"] = asked.context
        row["context_used"] = pool.use_context


def predict(
    live: LivePools,
    p: ProjectHandle,
    texts: list[str],
    *,
    k: int = 1,
    show: int = 5,
    who: Actor | None = None,
    contexts: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Classify texts against the project's labelled pool with its active encoder
    (``contexts``: the turn before each text, ``""`` for none).

    Raises ValueError for bad input or more texts than ``who``'s role may send in one call, and
    :class:`app.serving.admission.BusyError` when the call would go past the per-user or queue limits."""
    _, results = _classify(live, p, texts, k, show, who, contexts=contexts)
    return [row for row, _ in results]


def predict_explained(
    live: LivePools,
    p: ProjectHandle,
    texts: list[str],
    *,
    k: int = 1,
    show: int = 5,
    who: Actor | None = None,
    lines: bool = False,
    contexts: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Predictions, each with its ``explanation`` (the evidence card: sentence, runner-up
    evidence, margin, borderline diagnostic) and ``latency_ms`` (of the whole call)."""
    started = time.perf_counter()
    pool, results = _classify(live, p, texts, k, show, who, lines=lines, contexts=contexts)
    names = list(pool.intents)
    descriptions = {name: text for name, text in pool.intents.items() if text}
    latency = round((time.perf_counter() - started) * 1000, 1)
    for row, pred in results:
        row["latency_ms"] = latency
        # single-label out of scope: the k-NN threshold its top intent missed
        missed = row.get("threshold") if row["oos"] and "probabilities" not in row else None
        asked = (
            with_context(row["text"], row["context"]) if row.get("context_used") else row["text"]
        )
        row["explanation"] = explain(
            asked,
            pred,
            intents=names,
            intent_descriptions=descriptions,
            out_of_scope_below=missed,
            head_decided="probabilities" in row,
        ).to_dict()
    return [row for row, _ in results]


def predict_one(
    live: LivePools,
    p: ProjectHandle,
    text: str,
    *,
    k: int = 1,
    show: int = 5,
    who: Actor | None = None,
    context: str = "",
) -> dict[str, Any]:
    """One prediction with its explanation (see :func:`predict_explained`); ``context``: the
    turn before ``text``."""
    return predict_explained(live, p, [text], k=k, show=show, who=who, contexts=[context])[0]


def classify_requests(
    live: LivePools, requests: list[Request], *, explained: bool = True
) -> list[dict[str, Any] | Exception]:
    """Many independent ``(project, text, k[, context])`` requests at once (the micro-batch of the Gradio
    ``/predict`` endpoint and of the REST API): one encoder pass per (project, k), admitted as
    one-line calls. A request that fails gets its exception (a busy server: every request gets
    the :class:`BusyError`); the others still get their predictions. ``explained=False``: the
    bare prediction (a bundle's structure), without ``explanation`` and ``latency_ms``."""
    out: list[dict[str, Any] | Exception] = [{} for _ in requests]
    groups: dict[tuple[int, str], list[int]] = {}
    for i, request in enumerate(requests):  # k as sent: checked with the call (_classify)
        groups.setdefault((request[0].id, repr(request[2])), []).append(i)
    for idx in groups.values():
        p, k = requests[idx[0]][0], requests[idx[0]][2]
        texts = [requests[i][1] for i in idx]
        turns = [str((*requests[i][3:], "")[0]) for i in idx]
        results: list[dict[str, Any] | Exception]
        try:
            if explained:
                results = [*predict_explained(live, p, texts, k=k, lines=True, contexts=turns)]
            else:
                _, rows = _classify(live, p, texts, k, 5, None, lines=True, contexts=turns)
                results = [row for row, _ in rows]
        except BusyError as busy:
            results = [busy for _ in idx]
        except (ValueError, KeyError) as batch_error:
            if len(idx) == 1:
                results = [batch_error]
            else:  # find the culprit(s): the others still get their answers
                results = [
                    classify_requests(live, [requests[i]], explained=explained)[0] for i in idx
                ]
        for i, result in zip(idx, results, strict=True):
            out[i] = result
    return out


def error_message(exc: BaseException) -> str:
    """The user message of a refused request (a KeyError's repr quotes are dropped)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def predict_requests(live: LivePools, requests: list[Request]) -> list[dict[str, Any]]:
    """:func:`classify_requests` with each failure as ``{"error": message}`` alone (the Gradio
    ``/predict`` endpoint's answer)."""
    return [
        {"error": error_message(r)} if isinstance(r, Exception) else r
        for r in classify_requests(live, requests)
    ]
