"""A project's settings, typed: the one place that reads and checks the JSON stored with a project
(``Project.settings``), so every caller sees the same defaults and the same refusals.

The JSON is parsed in one place, :func:`settings_of` (a project's row in, its settings out):
once per request, at its edge, into the project's handle
(:attr:`app.access.ProjectHandle.settings`), or where a process reads the row without one;
everything below takes :class:`ProjectSettings`.
Each field is one line: its type, its default and its :class:`Kind` (how a stored value is
checked and what a person may type) with its title (:func:`setting`); a field absent from the
stored JSON takes its default (the out-of-scope target is on at 95 % unless set, and ``None``
turns it off), so a new setting needs no migration.

Example:
    >>> s = ProjectSettings.from_dict({"anchor_weight": 0, "oos_target_recall": None})
    >>> s.anchor_weight, s.oos_target_recall, s.encode_context, s.serve_int8, s.oos_calibration
    (0.0, None, False, True, 'auto')
    >>> ProjectSettings.from_dict(s.to_dict()) == s
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from core.encoding.previous_turn import with_context
from core.evaluation.oos import DEFAULT_TARGET_RECALL, check_target_recall
from core.retrieval.anchors import DEFAULT_ANCHOR_WEIGHT, check_weight
from storage.datasets import SnapshotRow
from storage.tables import Project
from storage.utterances import UtteranceRow

# The out-of-scope calibration a project may choose (the setting ``oos_calibration``; what
# ``auto`` means on a device: :meth:`app.serving.compute.ComputeBudget.calibration`).
CALIBRATIONS = ("auto", "held-out", "quick")


@dataclass(frozen=True)
class Kind:
    """What a setting takes: ``check`` turns a value of its own type (stored, or passed by code)
    into the setting's value or raises ``ValueError`` with its rule; ``parse`` does the same for
    the word a person typed (already stripped and lower-cased)."""

    check: Callable[[Any], Any]
    parse: Callable[[str], Any]


def _number(word: str, what: str) -> float:
    try:
        return float(word)
    except ValueError:
        raise ValueError(f"{what}, not {word!r}.") from None


def _recall(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"The target in-scope recall is a number or off, not {value!r}.")
    return check_target_recall(value)


def _parse_recall(word: str) -> float | None:
    if word == "off":
        return None
    what = "The target in-scope recall is a number such as 0.95 (or 'off')"
    number = _number(word.rstrip("%"), what)
    return check_target_recall(number / 100 if number > 1 else number)


def _weight(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | None):
        raise ValueError(f"An anchor weight is a number of examples, 0 or more; got {value!r}.")
    return check_weight(value)


def _parse_weight(word: str) -> float:
    what = "The anchor weight is a number of examples such as 1 (or 'off')"
    return check_weight(0.0 if word == "off" else _number(word, what))


def _on_off(value: Any) -> bool:
    # a stored 0/1 reads as off/on; a word (a hand-edited "off") is refused, never read as on
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise ValueError(f"is on or off (true or false), not {value!r}.")


def _parse_on_off(word: str) -> bool:
    if word not in ("on", "off"):
        raise ValueError(f"is 'on' or 'off', not {word!r}.")
    return word == "on"


def _labels(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
        raise ValueError(f"is a number of labels from 1 to 100,000, not {value!r}.")
    return value


def _parse_labels(word: str) -> int:
    # only what int() takes, so that its own words never reach a person: decimal digits (of any
    # script; "²" is a digit that int() refuses), and not more of them than it converts
    if not (word.isdecimal() and len(word) <= 20):
        raise ValueError(f"is a number of labels from 1 to 100,000, not {word!r}.")
    return _labels(int(word))


def _versions(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000:
        raise ValueError(f"is a number of versions from 1 to 1,000, not {value!r}.")
    return value


def _parse_versions(word: str) -> int:
    if not (word.isdecimal() and len(word) <= 20):  # what int() takes, as _parse_labels
        raise ValueError(f"is a number of versions from 1 to 1,000, not {word!r}.")
    return _versions(int(word))


# A target in-scope recall in [0.5, 1] (typed as 0.95 or 95%), or off (None).
RECALL_OR_OFF = Kind(_recall, _parse_recall)
# A number of examples, 0 or more (typed off: 0).
WEIGHT = Kind(_weight, _parse_weight)
ON_OFF = Kind(_on_off, _parse_on_off)
# A number of labels, 1 to 100,000.
LABELS = Kind(_labels, _parse_labels)
# A number of model versions, 1 to 1,000.
VERSIONS = Kind(_versions, _parse_versions)


def one_of(*choices: str) -> Kind:
    """A word among ``choices`` (typed in any case, with spaces, ``_`` or ``-`` between words:
    ``Held out`` is ``held-out``).

    Example:
        >>> one_of("auto", "held-out", "quick").parse("held out")
        'held-out'
    """
    takes = ", ".join(choices)

    def check(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"is one of {takes}, not {value!r}.")
        return str(value)

    def parse(word: str) -> str:
        return check("-".join(word.replace("_", " ").replace("-", " ").split()))

    return Kind(check, parse)


def setting(default: Any, kind: Kind, title: str) -> Any:
    """A field of :class:`ProjectSettings`: its default, its :class:`Kind` and its title (what
    it is in a designer's words: the Data tab's label, the CLI's heading)."""
    return dataclasses.field(default=default, metadata={"kind": kind, "title": title})


@dataclass(frozen=True)
class ProjectSettings:
    """What a project decides for itself, one line per setting (:func:`setting`).

    Args:
        oos_target_recall: the share of in-scope questions the out-of-scope thresholds keep
            (0.5 to 1; None: out-of-scope detection off).
        anchor_weight: the intents' names and descriptions in each prototype, in examples
            (0: anchors off).
        encode_context: encode each utterance after the turn before it.
        serve_int8: serve a version's int8 encoder when it passed parity.
        oos_calibration: how a retrain calibrates the out-of-scope thresholds of its version
            (:data:`CALIBRATIONS`): ``held-out`` (more trainings after the version
            serves; its correction applies while the version serves), ``quick`` (the pool's own
            scores, no correction) or ``auto`` (the device's default, :mod:`app.serving.compute`).
        auto_retrain: retrain by itself once ``auto_retrain_after`` labels were given or changed
            since the last retrain and nobody labelled for a moment
            (:mod:`app.services.training.auto_retrain`).
        auto_retrain_after: how many new or changed labels start an automatic retrain.
        keep_versions: how many of the newest versions keep their files besides the active one
            and those someone pinned, activated or exported (the retention rule,
            :mod:`app.services.models.retention`); the others' files are removed.
    """

    oos_target_recall: float | None = setting(
        DEFAULT_TARGET_RECALL,
        RECALL_OR_OFF,
        "Out-of-scope target (share of each intent's own questions kept)",
    )
    anchor_weight: float = setting(
        DEFAULT_ANCHOR_WEIGHT,
        WEIGHT,
        "Intent names and descriptions in predictions (in examples; 0 = off)",
    )
    encode_context: bool = setting(False, ON_OFF, "Encode each utterance after the turn before it")
    serve_int8: bool = setting(True, ON_OFF, "Serve the int8 encoder where it passed parity")
    oos_calibration: str = setting(
        "auto",
        one_of(*CALIBRATIONS),
        "Out-of-scope calibration after a retrain (auto = this device's default)",
    )
    auto_retrain: bool = setting(True, ON_OFF, "Retrain by itself after new labels")
    auto_retrain_after: int = setting(
        20, LABELS, "New or changed labels that start an automatic retrain"
    )
    keep_versions: int = setting(
        3, VERSIONS, "Newest versions that keep their files (and any pinned, activated, exported)"
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _checked(f.name, getattr(self, f.name)))

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any] | None) -> ProjectSettings:
        """The settings in a project's stored JSON (absent fields: defaults; other keys are
        not settings of this kind and are ignored).

        Raises:
            ValueError: a stored value its setting does not take (the message names the setting,
                the value and the rule).
        """
        stored = stored or {}
        return cls(**{k: v for k, v in stored.items() if k in KINDS})

    def to_dict(self) -> dict[str, Any]:
        """Every setting under its stored name."""
        return dataclasses.asdict(self)

    def with_texts(self, changes: Mapping[str, str]) -> ProjectSettings:
        """These settings with ``changes`` (setting name -> the value as typed: ``0.95``,
        ``95%``, ``off``, ``on``...) applied, each by :func:`parse_setting`.

        Example:
            >>> ProjectSettings().with_texts({"oos_target_recall": "90%", "anchor_weight": "off"})
            ProjectSettings(oos_target_recall=0.9, anchor_weight=0.0, encode_context=False, serve_int8=True, oos_calibration='auto', auto_retrain=True, auto_retrain_after=20, keep_versions=3)

        Raises:
            ValueError: an unknown setting or a value it does not take (nothing is changed).
        """
        return dataclasses.replace(
            self, **{name: parse_setting(name, text) for name, text in changes.items()}
        )


# Every setting's kind and title, by its stored name (in the fields' order).
KINDS: dict[str, Kind] = {f.name: f.metadata["kind"] for f in dataclasses.fields(ProjectSettings)}
TITLES: dict[str, str] = {f.name: f.metadata["title"] for f in dataclasses.fields(ProjectSettings)}
NAMES = tuple(KINDS)
# The stored names of the settings a bundle records.
OOS_SETTING = "oos_target_recall"
ANCHOR_SETTING = "anchor_weight"


def _checked(name: str, value: Any) -> Any:
    """``value`` as the setting ``name`` takes it; a message that names the setting otherwise."""
    try:
        return KINDS[name].check(value)
    except (TypeError, ValueError) as e:
        reason = str(e)
        if not reason[:1].isupper():  # a kind's own rule: "is on or off, not 'maybe'."
            reason = f"{name} {reason}"
        raise ValueError(reason) from None


def parse_setting(name: str, text: str | float | bool | None) -> Any:
    """A setting's value from what a person typed (a value of its own type passes through,
    checked): ``oos_target_recall`` a recall (``0.95``, ``95%``) or ``off``; ``anchor_weight`` a
    number of examples or ``off``; ``encode_context``, ``serve_int8`` and ``auto_retrain``
    ``on`` or ``off``; ``oos_calibration`` ``auto``, ``held-out`` or ``quick``;
    ``auto_retrain_after`` a number of labels; ``keep_versions`` a number of versions.

    Example:
        >>> parse_setting("oos_target_recall", "95%"), parse_setting("encode_context", "on")
        (0.95, True)
        >>> parse_setting("oos_calibration", "Held out")
        'held-out'
    """
    if name not in KINDS:
        raise ValueError(f"Unknown setting {name!r}: use one of {', '.join(NAMES)}.")
    if not isinstance(text, str):
        return _checked(name, text)
    try:
        return KINDS[name].parse(text.strip().lower())
    except ValueError as e:
        reason = str(e)
        if not reason[:1].isupper():
            reason = f"{name} {reason}".replace(f"{text.strip().lower()!r}", repr(text))
        raise ValueError(reason) from None


def settings_of(project: Project) -> ProjectSettings:
    """The settings stored with ``project`` (its row: ``Project.settings``), parsed: the one
    door from the stored JSON to :class:`ProjectSettings` (issue 76 item 2). The project's handle
    carries what it gives (:func:`app.access.handle.resolve`); what holds no handle asks it with
    the project's row (:class:`app.serving.live.LivePools`, a retrain's snapshot, the automatic
    retrain's watcher).

    Raises:
        ValueError: a stored value its setting does not take, said for a person: which project,
            which setting, and what it takes.

    Example:
        >>> settings_of(Project(name="shop", settings={"anchor_weight": "lots"}))
        Traceback (most recent call last):
        ...
        ValueError: Project 'shop' has a stored setting that is not valid: An anchor weight is a number of examples, 0 or more; got 'lots'.
    """
    try:
        return ProjectSettings.from_dict(project.settings)
    except ValueError as e:
        raise ValueError(
            f"Project {project.name!r} has a stored setting that is not valid: {e}"
        ) from None


_Row = TypeVar("_Row", UtteranceRow, SnapshotRow)


def as_encoded(rows: Iterable[_Row], settings: ProjectSettings) -> list[_Row]:
    """The rows with ``text`` as the encoder sees it: after the row's context when the project
    encodes context (a retrain and an evaluation see what the pool sees), else unchanged."""
    if not settings.encode_context:
        return list(rows)
    return [
        dataclasses.replace(r, text=with_context(r.text, r.context)) if r.context else r
        for r in rows
    ]
