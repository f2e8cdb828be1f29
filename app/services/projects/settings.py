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
from app.services.models import calibration, encoders, version_files
from app.services.projects import projects as project_svc
from app.services.training import auto_retrain
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
    auto_brief: str = ""  # the automatic retrain's line without its rule (AutoState.brief)
    deployment: bool = True  # the deployment's automatic retrain switch (off wins)

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


NOTHING_CHANGED = "Nothing changed."  # a change that changed no setting
# The automatic retrain's two settings, said as one switch (switch_words).
AUTO_SETTINGS = ("auto_retrain", "auto_retrain_after")


def switch_words(values: ProjectSettings, deployment: bool = True) -> str:
    """The automatic retrain's switch and its threshold in a designer's words, as the Label
    tab's model line, the Train tab, a saved change, the CLI and REST say it (what counts as a
    new label, and when: :attr:`app.services.training.auto_retrain.AutoState.words`);
    ``deployment``: the deployment's switch (:attr:`app.config.Settings.auto_retrain`), which
    wins when off: a project switched on says so beside its own switch.

    Example:
        >>> switch_words(ProjectSettings()), switch_words(ProjectSettings(auto_retrain=False))
        ('Retrain by itself after 20 new labels: on', 'Retrain by itself after 20 new labels: off')
        >>> switch_words(ProjectSettings(), deployment=False)
        'Retrain by itself after 20 new labels: on (but off for this deployment)'
    """
    said = f"Retrain by itself after {values.auto_retrain_after} new labels: {shown(values.auto_retrain)}"
    return (
        said if deployment or not values.auto_retrain else f"{said} (but off for this deployment)"
    )


def moved_words(before: ProjectSettings, after: ProjectSettings) -> str:
    """What a change did to the automatic retrain's switch, in words ("" when nothing).

    Example:
        >>> on, off = ProjectSettings(), ProjectSettings(auto_retrain=False)
        >>> moved_words(on, off), moved_words(on, ProjectSettings(auto_retrain_after=30))
        ('Retrain by itself after 20 new labels: off (was on)', 'Retrain by itself after 30 new labels (was 20): on')
    """
    if all(getattr(before, n) == getattr(after, n) for n in AUTO_SETTINGS):
        return ""
    after_n, was_n = after.auto_retrain_after, before.auto_retrain_after
    count = f"{after_n} new labels" + (f" (was {was_n})" if after_n != was_n else "")
    state = shown(after.auto_retrain)
    if after.auto_retrain != before.auto_retrain:
        state += f" (was {shown(before.auto_retrain)})"
    return f"Retrain by itself after {count}: {state}"


def described() -> list[str]:
    """Every setting in one line each, as ``settings --help`` lists them: its name and what it
    is; the automatic retrain as its switch, in the words every screen says it in."""
    width = max(map(len, SETTINGS)) + 2
    lines = []
    for name in SETTINGS:
        what = TITLES[name]
        if name == "auto_retrain":
            what = (
                "Retrain by itself after N new labels (N: auto_retrain_after): on or off; "
                f"unless set, {switch_words(ProjectSettings())}"
            )
        lines.append(f"  {name:<{width}}{what}")
    return lines


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
    auto = auto_retrain.state(live.db, p, live.models.budget, live.auto_retrain)
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
                + ("" if auto.on and auto.deployment else "; automatic retrains are off")
                + "."
            ),
            "keep_versions": version_files.keep_words(live.db, p),
            encoders.SETTING: f"{encoder.why} {encoder.switch}".replace("`", ""),
        },
        thresholds=dict(oos["thresholds"]),
        anchor_texts=dict(anchors["texts"]),
        base_encoder=p.base_encoder,
        encoder_choices=tuple(encoders.choices()),
        auto_brief=auto.brief,
        deployment=auto.deployment,
    )


def change(live: LivePools, p: ProjectHandle, changes: dict[str, str]) -> tuple[SettingsView, str]:
    """Apply ``changes`` (name -> value as typed; every value is checked first, one bad value
    changes nothing) and return the settings after it with a sentence naming what changed."""
    unknown = sorted(set(changes) - set(SETTINGS))
    if unknown:
        raise ValueError(f"Unknown setting {unknown[0]!r}: use one of {', '.join(SETTINGS)}.")
    was = project_svc.settings(live.db, p)
    before = {**was.to_dict(), encoders.SETTING: p.base_encoder}  # read before the change
    now = project_svc.set_settings(live.db, p, changes)
    after = {**now.to_dict(), encoders.SETTING: open_project(live.db, p.id, p.actor).base_encoder}
    moved = [
        f"{name} {shown(before[name])} → {shown(after[name])}"
        for name in SETTINGS
        if before[name] != after[name] and name not in AUTO_SETTINGS
    ]
    said = [*(["Changed " + "; ".join(moved)] if moved else []), moved_words(was, now)]
    message = ". ".join(w for w in said if w) + "." if any(said) else NOTHING_CHANGED
    return view(live, open_project(live.db, p.id, p.actor)), message  # the project as it is now
