"""Design tab, candidate intents: cluster the unlabelled utterances, look at one cluster (its
words, central examples, nearest intent, its points on the map), untick what does not belong,
then create a new intent from it or add it to an existing one (one batch, one Undo). Callbacks
only call :mod:`app.services.design.clusters`."""

from __future__ import annotations

import dataclasses
from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import ADOPT_CANDIDATE
from app.services.design import clusters as svc
from app.services.design import maps as map_svc
from app.services.labelling import data as data_svc
from app.serving.live import LivePools
from app.serving.map_store import MapStore
from app.ui.common import attempt, bind, breakable, md_text, ok, problem
from app.ui.guard import guarded
from storage.db import Database

CLOSE = 0.6  # a cluster this similar to an intent is offered for "add to" it
HEADERS = [
    "#",
    "coherence",
    "distinctive words",
    "size",
    "already an intent?",
    "nearest intent",
    "central examples",
]
HELP = (
    "Groups of similar **unlabelled** utterances (candidate intents), named by the words that "
    "set them apart, with their central examples. **New ones first, most coherent first**: "
    "*coherence* is the mean similarity of a group's utterances to its centre; 90 % and above is "
    "usually one intent, below 85 % often several (untick what does not belong). A group the "
    "model already puts in an existing intent (*already an intent?*: ≈ that intent) comes after "
    "the new ones: add it to that intent, or leave it."
)


def _row(c: dict[str, Any]) -> list[Any]:
    near = c["nearest_intent"]
    return [
        c["number"],
        c["coherence"],
        ", ".join(c["keywords"]),
        len(c["ids"]),
        # names break only after an underscore (app.ui.common.breakable), never mid-word
        f"≈ {breakable(c['looks_like'])}" if c["resembles"] else "no: new",
        f"{breakable(near)} ({c['nearest_similarity']:.2f})" if near else "–",
        " · ".join(c["texts"][:3]),
    ]


def find(live: LivePools, p: ProjectHandle | None) -> tuple[Any, ...]:
    """Cluster the unlabelled utterances: (table, cluster picker, status, found, intents)."""
    if p is None:
        return gr.update(value=[]), gr.update(choices=[], value=None), "Pick a project.", [], []
    found, err = attempt(lambda: svc.candidate_intents(live, p))
    intents, names_err = attempt(lambda: data_svc.intent_names(live.db, p))
    err = err or names_err
    existing = gr.update(choices=intents or [])
    if err or found is None:
        return (
            gr.update(value=[]),
            gr.update(choices=[], value=None),
            problem(err or ""),
            [],
            existing,
        )
    state = [
        {
            **dataclasses.asdict(c),
            "choice": c.choice,
            "coherence": c.coherence,
            "looks_like": c.looks_like,
            "suggested_name": c.suggested_name,
        }
        for c in found
    ]
    if not state:
        status = (
            "No clear groups among the unlabelled utterances: they are all different from each "
            "other (or too few alike). Label them one by one in the Label tab."
        )
    else:
        n = sum(len(c["ids"]) for c in state)
        old = sum(bool(c["resembles"]) for c in state)
        status = (
            f"{len(state)} candidate intents holding {n} unlabelled utterances: "
            f"**{len(state) - old} look new**, most coherent first"
            + (
                f"; then {old} the model already puts in an existing intent (≈ in the table)"
                if old
                else ""
            )
            + ". Pick one below to see its examples and its points on the map."
        )
    picker = gr.update(
        choices=[(c["choice"], c["number"]) for c in state],
        value=state[0]["number"] if state else None,
    )
    return gr.update(value=[_row(c) for c in state]), picker, status, state, existing


def show(
    maps: MapStore, p: ProjectHandle | None, found: list[dict[str, Any]], number: int | None
) -> tuple[Any, ...]:
    """One cluster: (examples to keep, suggested name, existing intent (its nearest one when that
    is close), note, map, map note, poll: on while the map is being computed)."""
    idle = gr.update(active=False)
    c = next((c for c in found or [] if c["number"] == number), None)
    if p is None or c is None:
        return gr.update(choices=[], value=[]), "", gr.update(), "", None, "", idle
    examples = gr.update(
        choices=[(t, str(i)) for i, t in zip(c["ids"], c["texts"], strict=True)],
        value=[str(i) for i in c["ids"]],
    )
    near, like = c["nearest_intent"], list(c["resembles"])
    if like:
        names = md_text(", ".join(like))
        note = (
            f"**Already {'an intent' if len(like) == 1 else 'intents'}: {names}**: the model "
            f"puts {c['resembling']} of these {len(c['ids'])} utterances there. Add them below, "
            f"or leave them; coherence {c['coherence']}."
        )
    elif near:
        note = (
            f"Looks new: nearest existing intent **{md_text(near)}** (similarity "
            f"{c['nearest_similarity']:.2f}); coherence {c['coherence']}."
        )
    else:
        note = f"No labelled intent yet to compare with; coherence {c['coherence']}."
    # offered for "add to" when it resembles one, or its nearest is close: a far one would
    # invite a wrong click
    close = gr.update(value=like[0] if like else near if c["nearest_similarity"] >= CLOSE else None)
    head = (examples, c["suggested_name"], close, note)
    view, err = attempt(lambda: map_svc.get_map(maps, p))
    if err:
        return *head, None, problem(err), idle
    if view is None:
        busy = gr.update(active=True)
        return *head, None, "The map is being computed in the background…", busy
    if view.provisional:  # a PCA picture now, the map asked for when it lands
        return *head, _figure(view, c), PROVISIONAL, gr.update(active=True)
    return *head, _figure(view, c), "", idle


PROVISIONAL = "A quick PCA picture while the map is computed in the background…"


def _figure(view: Any, c: dict[str, Any]) -> Any:
    fig = svc.cluster_figure(view, c["ids"], c["title"])
    fig.update_layout(height=420, showlegend=False)
    return fig


def poll_map(
    maps: MapStore, p: ProjectHandle | None, found: list[dict[str, Any]], number: int | None
) -> tuple[Any, ...]:
    """The map once it is ready (the rest left as the designer has it): (map, map note, poll)."""
    c = next((c for c in found or [] if c["number"] == number), None)
    if p is None or c is None:
        return gr.update(), gr.update(), gr.update(active=False)
    view, err = attempt(lambda: map_svc.get_map(maps, p))
    if err:
        return gr.update(), problem(err, notify=False), gr.update(active=False)
    if view is None:
        return gr.update(), gr.update(), gr.update(active=True)
    if view.provisional:
        return _figure(view, c), PROVISIONAL, gr.update(active=True)
    return _figure(view, c), "", gr.update(active=False)


def _ids(values: list[str] | None) -> list[int]:
    return [int(v) for v in values or [] if str(v).strip().isdigit()]


def _done(plan: Any, what: str) -> str:
    left = f" Left {len(plan.labelled)} labelled meanwhile as they were." if plan.labelled else ""
    return ok(
        f"{what}: {len(plan.change)} utterance(s) labelled {plan.target_text}.{left} "
        "One Undo (Data or Activity tab) reverts the whole batch."
    )


def create_from_cluster(db: Database, p: ProjectHandle, chosen: list[str], name: str) -> str:
    """A new intent from the ticked examples of the picked cluster."""
    plan, err = attempt(lambda: svc.create_from_cluster(db, p, _ids(chosen), name))
    return problem(err or "") if err or plan is None else _done(plan, f"Created {name.strip()!r}")


def add_cluster_to_intent(db: Database, p: ProjectHandle, chosen: list[str], intent: str) -> str:
    """The ticked examples of the picked cluster join an existing intent."""
    plan, err = attempt(lambda: svc.add_to_intent(db, p, _ids(chosen), intent))
    return problem(err or "") if err or plan is None else _done(plan, f"Added to {intent!r}")


def build_clusters(
    live: LivePools, maps: MapStore, project: gr.Dropdown, user: gr.State
) -> dict[str, Any]:
    """Lay out the candidate intents section and bind its events (the clusters come from the live
    pools, their map from the map store). Returns its refresh hook."""
    gr.Markdown("### Candidate intents from unlabelled utterances")
    with gr.Row():
        gr.Markdown(HELP, scale=4)
        find_btn = gr.Button(
            "Find candidate intents", scale=1, size="md", variant="primary", elem_id="design-find"
        )
    status = gr.Markdown(elem_id="design-clusters-status")
    table = gr.Dataframe(
        headers=HEADERS,
        interactive=False,
        max_height=260,
        column_widths=["4%", "10%", "17%", "5%", "17%", "15%", "32%"],
        datatype=["number", "str", "str", "number", "markdown", "markdown", "str"],
        wrap=True,
        elem_id="design-clusters",
    )
    found = gr.State([])
    with gr.Row():
        with gr.Column(scale=5):
            pick = gr.Dropdown(label="Cluster", choices=[], elem_id="design-cluster-pick")
            note = gr.Markdown(elem_id="design-cluster-note")
            examples = gr.CheckboxGroup(
                label="Examples to keep (untick what does not belong)",
                choices=[],
                elem_id="design-cluster-examples",
            )
            with gr.Row():
                name = gr.Textbox(
                    label="New intent name", max_lines=1, scale=3, elem_id="design-new-name"
                )
                create_btn = gr.Button("Create intent", scale=1, size="md", elem_id="design-create")
            with gr.Row():
                existing = gr.Dropdown(
                    label="…or add to an existing intent",
                    choices=[],
                    scale=3,
                    elem_id="design-existing",
                )
                add_btn = gr.Button("Add to intent", scale=1, size="md", elem_id="design-add")
            action = gr.Markdown(elem_id="design-cluster-action")
        with gr.Column(scale=4):
            plot = gr.Plot(label="The cluster on the map", elem_id="design-cluster-map")
            map_note = gr.Markdown(elem_id="design-cluster-map-note")
    poll = gr.Timer(2.0, active=False)

    find_outputs = [table, pick, status, found, existing]
    find_btn.click(bind(find, live), [project], find_outputs, api_name="candidate_intents")
    pick.change(
        bind(show, maps),
        [project, found, pick],
        [examples, name, existing, note, plot, map_note, poll],
        api_visibility="private",
    )
    poll.tick(
        bind(poll_map, maps),
        [project, found, pick],
        [plot, map_note, poll],
        api_visibility="private",
        show_progress="hidden",
    )
    create_btn.click(
        guarded(ADOPT_CANDIDATE)(bind(create_from_cluster, live.db)),
        [project, examples, name],
        [action],
        api_name="create_from_cluster",
    ).then(bind(find, live), [project], find_outputs, api_visibility="private")
    add_btn.click(
        guarded(ADOPT_CANDIDATE)(bind(add_cluster_to_intent, live.db)),
        [project, examples, existing],
        [action],
        api_name="add_cluster_to_intent",
    ).then(bind(find, live), [project], find_outputs, api_visibility="private")
    return {"existing": existing, "status": status}
