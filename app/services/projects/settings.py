"""A project's settings, read and changed as one (the CLI's ``settings`` and the Data tab's
Project settings section): each setting's value, and a line on what it does in the project now.

The values are :class:`app.project_settings.ProjectSettings`; each line comes from the service
that owns the setting (the out-of-scope calibration and how a retrain calibrates it, the
anchors, context encoding, the served encoder), so the CLI, the UI and the REST answers say the same."""

from __future__ import annotations

from dataclasses import dataclass

from app.access import ProjectHandle, open_project
from app.project_settings import NAMES, ProjectSettings
from app.project_settings import TITLES as project_titles
from app.services.models import auto_retrain, calibration, encoders, version_files
from app.services.projects import projects as project_svc
from app.serving.live import LivePools

# What each setting is, in a designer's words (the UI's labels and the CLI's headings): the
# project's own (each field's title, app.project_settings), then its base encoder.
TITLES = {**project_titles, encoders.SETTING: "Base encoder (the next retrain trains on it)"}
# Every setting by name: the project's own (ProjectSettings), then its base encoder.
SETTINGS = (*NAMES, encoders.SETTING)


@dataclass(frozen=True)
class SettingsView:
    """The settings and, per setting, one line on its effect in the project now."""

    values: ProjectSettings
    effects: dict[str, str]
    thresholds: dict[str, float]  # the out-of-scope thresholds calibrated now, by intent
    anchor_texts: dict[str, str]  # each intent's anchor: its description or humanised name
    base_encoder: str = "minilm"
    encoder_choices: tuple[str, ...] = ()  # the base encoders installed here

    def lines(self) -> list[str]:
        """``name = value`` then its effect, setting by setting (the CLI's text output)."""
        out = []
        values = {**self.values.to_dict(), encoders.SETTING: self.base_encoder}
        for name, value in values.items():
            out.append(f"{name} = {shown(value)}")
            out.append(f"    {self.effects[name]}")
        return out

    def to_dict(self) -> dict[str, object]:
        """The CLI's JSON: the values under their names, then what they do."""
        return {
            **self.values.to_dict(),
            encoders.SETTING: self.base_encoder,
            "effects": self.effects,
            "thresholds": self.thresholds,
            "anchor_texts": self.anchor_texts,
        }


def shown(value: object) -> str:
    """A setting's value as a person writes it (``off``, ``on``, ``0.95``)."""
    if value is None or value is False:
        return "off"
    return "on" if value is True else f"{value:g}" if isinstance(value, float) else str(value)


def view(live: LivePools, p: ProjectHandle) -> SettingsView:
    """The project's settings and their effects now."""
    oos = project_svc.out_of_scope(live, p)
    anchors = project_svc.anchors(live.db, p)
    encoder = encoders.encoder_view(live.db, p, live.models.budget, live.models.artifacts)
    auto = auto_retrain.state(live.db, p, live.models.budget)
    return SettingsView(
        project_svc.settings(live.db, p),
        {
            "oos_target_recall": oos["message"],
            "anchor_weight": anchors["message"],
            "encode_context": project_svc.context_encoding(live.db, p)["message"],
            "serve_int8": encoder.serving,
            "oos_calibration": calibration.calibration_line(live, p, live.models.budget),
            "auto_retrain": auto.words,
            "auto_retrain_after": (
                f"Changes weighing {auto.after} since the last retrain (a new example weighs 1, "
                f"net of undos) start the next one by itself ({auto.so_far} so far)"
                + ("" if auto.on else "; automatic retrains are off")
                + "."
            ),
            "keep_versions": version_files.keep_words(live.db, p),
            encoders.SETTING: f"{encoder.why} {encoder.switch}".replace("`", ""),
        },
        thresholds=dict(oos["thresholds"]),
        anchor_texts=dict(anchors["texts"]),
        base_encoder=p.base_encoder,
        encoder_choices=tuple(encoders.choices()),
    )


def change(live: LivePools, p: ProjectHandle, changes: dict[str, str]) -> tuple[SettingsView, str]:
    """Apply ``changes`` (name -> value as typed; every value is checked first, one bad value
    changes nothing) and return the settings after it with a sentence naming what changed."""
    unknown = sorted(set(changes) - set(SETTINGS))
    if unknown:
        raise ValueError(f"Unknown setting {unknown[0]!r}: use one of {', '.join(SETTINGS)}.")
    before = {**project_svc.settings(live.db, p).to_dict(), encoders.SETTING: p.base_encoder}
    after = project_svc.set_settings(live.db, p, changes).to_dict()
    after[encoders.SETTING] = open_project(live.db, p.id, p.actor).base_encoder
    moved = [
        f"{name} {shown(before[name])} → {shown(after[name])}"
        for name in SETTINGS
        if before[name] != after[name]
    ]
    message = "Changed " + "; ".join(moved) + "." if moved else "Nothing changed."
    return view(live, open_project(live.db, p.id, p.actor)), message  # the project as it is now
