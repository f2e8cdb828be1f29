"""A project's base encoder: which one it trains and serves, why (the compute budget of this
device, :mod:`app.serving.compute`), and what switching would cost here. Switching is one project
setting, ``base_encoder`` (:func:`app.services.projects.projects.set_settings`, so the CLI's
``settings``, the Data tab's Project settings and REST set it like the others): the next retrain
trains on it, the active version keeps serving until a new one is promoted, and the frozen base
(the pool before any retrain) is the new encoder at once."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from app.access import ProjectHandle
from app.services.models.time_words import span
from app.services.models.versions import serving
from app.serving.compute import DEFAULT_ENCODER, STRONG_ENCODER, ComputeBudget, process_budget
from core.encoding.registry import installed, registry
from core.evaluation.version_metrics import VersionMetrics
from storage import versions
from storage.artifacts import ArtifactStore
from storage.db import Database

SETTING = "base_encoder"


def check_encoder(name: str) -> str:
    """``name`` as a base encoder a project may switch to: a registered encoder installed here.

    Raises:
        ValueError: an unknown encoder, or one not installed (naming how to install it).
    """
    name = str(name).strip()
    known = registry()
    if name not in known:
        raise ValueError(f"Unknown encoder {name!r}: use one of {', '.join(sorted(known))}.")
    if not installed(name):
        hint = " (`make mpnet`)" if name == STRONG_ENCODER else ""
        raise ValueError(f"The encoder {name!r} is not installed here{hint}.")
    return name


def choices() -> list[str]:
    """The base encoders a project may use here (registered and installed)."""
    return [name for name in registry() if installed(name)]


@dataclass(frozen=True)
class EncoderView:
    """A project's encoder in words: ``name``, ``serving`` (which encoder answers now),
    ``why`` (this device's default and its reason) and ``switch`` (what the other costs here)."""

    name: str
    description: str
    serving: str
    why: str
    switch: str


def _where(budget: ComputeBudget) -> str:
    return "GPU" if budget.device == "cuda" else "CPU"


def last_training(db: Database, p: ProjectHandle) -> float | None:
    """The training seconds of the project's newest version on its base encoder (None: none)."""
    with db.session() as s:
        for mv, _ in versions.history(s, p.id):
            if mv.base_encoder == p.base_encoder:
                return VersionMetrics.from_dict(mv.metrics).train_seconds
    return None


def switch_cost(
    name: str, budget: ComputeBudget, last_train_s: float | None, project: str = "NAME"
) -> str:
    """What switching from ``name`` to the other registered encoder costs on ``budget``'s
    device, in words (the last retrain's training seconds, when known, made concrete)."""
    other = STRONG_ENCODER if name != STRONG_ENCODER else DEFAULT_ENCODER
    how = (
        f"one project setting (Data → Project settings → Base encoder, or `intent-studio "
        f"settings --project {shlex.quote(project)} --set {SETTING}={other}`): the next retrain "
        "trains on it and the active version serves until a new one is promoted."
    )
    if not installed(other):
        return f"{other} is not installed here (`make mpnet`). Switching is {how}"
    train_x, encode_x = budget.mpnet_cost()
    if train_x is None or encode_x is None:
        cost = f"{other}'s training time on this {_where(budget)} is not measured yet"
    elif other == STRONG_ENCODER:
        said = f" (the last one trained in {span(last_train_s)}: about " if last_train_s else ""
        then = f"{span(last_train_s * train_x)})" if last_train_s else ""
        cost = (
            f"retrains take about {train_x:g}x as long here{said}{then} and every text encodes "
            f"about {encode_x:g}x as slowly, for 1.2-3.0 points more accuracy on BANKING77 and "
            "CLINC150"
        )
    else:
        cost = (
            f"retrains take about 1/{train_x:g} of the time here and texts encode about "
            f"{encode_x:g}x faster, for 1.2-3.0 points less accuracy on BANKING77 and CLINC150"
        )
    return f"To {other}: {cost}. Switching is {how}"


def encoder_view(
    db: Database,
    p: ProjectHandle,
    budget: ComputeBudget | None = None,
    artifacts: ArtifactStore | None = None,
) -> EncoderView:
    """The project's encoder, why, and what switching costs here (see the module);
    ``artifacts``: where a frozen base's int8 copy is found (what serves it, then)."""
    budget = budget or process_budget()
    name = p.base_encoder
    spec = registry().get(name)
    default = budget.new_project_encoder
    if name == default:
        why = budget.reasons["encoder"]
    else:
        why = (
            f"this project chose it; on this {_where(budget)} a new project starts on "
            f"{default}: {budget.reasons['encoder']}"
        )
    return EncoderView(
        name=name,
        description=spec.description if spec else name,
        serving=serving(db, p, artifacts),
        why=why[0].upper() + why[1:] + ".",
        switch=switch_cost(name, budget, last_training(db, p), p.name),
    )
