"""The Try tab: classify an utterance and see the labelled examples behind the ranking."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from app.access import ProjectHandle
from app.access.actions import EDIT, READ
from app.services.labelling import data as data_svc
from app.services.models import predict as svc
from app.serving.live import LivePools
from app.ui.common import attempt, bind, breakable, md_sentence, md_text, ok, problem
from app.ui.guard import guarded
from core.evaluation.oos import OUT_OF_SCOPE
from storage.db import Database

HELP = (
    "The classifier *is* the labelled pool: an utterance gets the intent of its most similar "
    "labelled examples in the encoder's space (cosine similarity). The examples listed below are "
    "the decision itself, not an after-the-fact approximation. Labelling an utterance changes the "
    "next prediction at once, without retraining."
)


def explanation_markdown(result: dict[str, Any]) -> str:
    """The evidence card of a prediction: the plain sentence, margin, and the warnings."""
    ex = result.get("explanation") or {}
    if not result["intents"]:
        return "No prediction: the pool is empty."
    sentence = md_sentence(ex.get("sentence", ""))
    lines = [sentence, "", f"score {result['score']:.2f} · margin {result['margin']:.2f}"]
    if ex.get("ambiguous"):
        lines.append("⚠ Close call: the runner-up intent is almost as similar.")
    if result.get("probabilities") is not None:
        theta = result.get("threshold", 0.3)
        chosen = ", ".join(
            f"**{md_text(name)}** ({result['probabilities'][name]:.2f})"
            for name in result["labels"]
        )
        lines.insert(0, f"Multi-label decision (θ = {theta:.2f}): {chosen or 'no intent'}.")
    if ex.get("borderline"):
        lines.append("⚠ " + md_sentence(ex.get("borderline_reason", "")))  # says "Borderline:"
    return "\n\n".join(lines)


def _context_note(result: dict[str, Any]) -> str:
    """Says whether the previous turn typed in took part (only when one was typed)."""
    if "context" not in result:
        return ""
    if result.get("context_used"):
        return "Encoded after the previous turn (the project encodes context).\n\n"
    return (
        "The previous turn was ignored: this project encodes utterances alone "
        "(`intent-studio context --project NAME --encode on`).\n\n"
    )


def _prefill(result: dict[str, Any]) -> list[str]:
    """The label box starts at the decision: its intents, or out of scope (never a wrong top)."""
    return list(result["labels"]) or ([OUT_OF_SCOPE] if result.get("oos") else [])


def run(
    live: LivePools, p: ProjectHandle, utterance: str, k_value: float, context: str | None = ""
) -> tuple[Any, ...]:
    """Predict ``utterance`` (after ``context``, the turn before it, when the project encodes
    context): the evidence card, the ranked intents, the neighbours, the label box (at the
    decision), the status."""
    return _predicted(live, p, utterance, k_value, context, keep_choice=False)


def _predicted(
    live: LivePools,
    p: ProjectHandle,
    utterance: str,
    k_value: float,
    context: str | None,
    *,
    keep_choice: bool,
) -> tuple[Any, ...]:
    result, err = attempt(
        lambda: svc.predict_one(live, p, utterance, k=int(k_value), context=context or "")
    )
    names = data_svc.intent_names(live.db, p)  # a refusal here is the front door's to show
    if err or result is None:
        return problem(err or ""), None, None, gr.update(choices=names or []), ""
    ranked_df = pd.DataFrame(
        [
            [
                breakable(r["intent"]),  # a name breaks only after an underscore
                round(r["score"], 2),
                r["best"]["text"],
                round(r["best"]["similarity"], 2),
            ]
            for r in result["intents"]
        ],
        columns=["intent", "score", "nearest example of this intent", "similarity"],
    )
    neigh_df = pd.DataFrame(
        [
            [n["text"], "|".join(map(breakable, n["labels"])), round(n["similarity"], 2)]
            for n in result["neighbours"]
        ],
        columns=["labelled example", "intents", "similarity"],
    )
    return (
        _context_note(result) + explanation_markdown(result),
        ranked_df,
        neigh_df,
        gr.update(choices=names or [])
        if keep_choice
        else gr.update(choices=names or [], value=_prefill(result)),
        f"{result['latency_ms']} ms",
    )


def run_after_label(
    live: LivePools, p: ProjectHandle, utterance: str, k_value: float, context: str | None = ""
) -> tuple[Any, ...]:
    """The prediction again after a label: the label box keeps the designer's choice (a name
    refused as unknown stays there, to be created or corrected, and never turns into the
    prediction a second click would store)."""
    return _predicted(live, p, utterance, k_value, context, keep_choice=True)


def label(
    db: Database, p: ProjectHandle, utterance: str, labels: list[str], context: str | None = ""
) -> str:
    """Add the utterance, with the previous turn typed in as its context, to the pool."""
    row, err = attempt(
        lambda: data_svc.add_utterance(db, p, utterance, labels, "train", context=context or "")
    )
    if err or row is None:
        return problem(err or "")
    return ok(
        f"Added “{row['text'][:60]}” as {', '.join(row['labels'])}; it counts from the next prediction."
    )


def build_try_tab(live: LivePools, project: gr.Dropdown, user: gr.State) -> None:
    gr.Markdown(HELP)
    with gr.Row():
        text = gr.Textbox(
            label="Utterance", placeholder="e.g. where is my parcel?", scale=4, elem_id="try-text"
        )
        k = gr.Slider(1, 5, value=1, step=1, label="k (examples per intent)", scale=1)
        go = gr.Button("Predict", variant="primary", scale=1, elem_id="try-predict")
    turn = gr.Textbox(
        label="Previous turn (optional: used when the project encodes context)",
        placeholder="e.g. Do you want to cancel your card?",
        elem_id="try-context",
    )
    explanation = gr.Markdown(elem_id="try-explanation")
    with gr.Row():
        ranked = gr.Dataframe(
            headers=["intent", "score", "nearest example of this intent", "similarity"],
            interactive=False,
            wrap=True,
            datatype=["markdown", "number", "str", "number"],
            column_widths=["27%", "11%", "42%", "20%"],
            label="Ranked intents",
            elem_id="try-ranked",
        )
        neighbours = gr.Dataframe(
            headers=["labelled example", "intents", "similarity"],
            interactive=False,
            wrap=True,
            datatype=["str", "markdown", "number"],
            column_widths=["54%", "26%", "20%"],
            label="Nearest labelled neighbours",
            elem_id="try-neighbours",
        )
    with gr.Row():
        label_as = gr.Dropdown(
            label="Label this utterance as",
            multiselect=True,
            allow_custom_value=True,
            choices=[],
            scale=3,
            elem_id="try-label-as",
        )
        label_btn = gr.Button("Add to the training pool", scale=1, elem_id="try-label")
    status = gr.Markdown()
    label_status = gr.Markdown(elem_id="try-label-status")

    # The signed-in user's limits apply (app.serving.admission); the Try events share one set of threads.
    predict = guarded(READ, outputs=5)(bind(run, live))
    for asked in (go.click, text.submit):  # the button and Enter in the text box
        asked(
            predict,
            [project, text, k, turn],
            [explanation, ranked, neighbours, label_as, status],
            api_visibility="private",
            concurrency_id="try_predict",
            concurrency_limit=4,
        )
    label_btn.click(
        guarded(EDIT)(bind(label, live.db)),
        [project, text, label_as, turn],
        [label_status],
        api_visibility="private",
    ).then(
        guarded(READ, outputs=5)(bind(run_after_label, live)),
        [project, text, k, turn],
        [explanation, ranked, neighbours, label_as, status],
        show_progress="hidden",
        concurrency_id="try_predict",
        concurrency_limit=4,
    )
