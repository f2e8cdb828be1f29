"""Which model versions keep their files (issue 71 item 4, issue 73 item 5): the retention rule,
written once (:func:`rule`, a pure function over a project's versions), the disk the versions
use and its budget (:func:`disk`, :func:`check_budget`).

The rule keeps the files (a version's artifact and its int8 copy's) of the active version, of
the newest ``keep_versions`` (a project setting) among those that have files, and of every
version someone pinned, activated by hand (a rollback or an activation) or exported (a bundle
of it, or the report while it served). A version an automatic retrain kept back (its gate did
not promote it, and nobody activated it) keeps nothing: it cannot serve unless a person
activates it, and nobody can once its job ended. Every other version's files are removed;
its row stays in the history, saying why it has none, and activating, exporting or comparing it
is refused with that reason (:func:`require_files`). The pass that applies the rule (after every
job ends, and on demand) is :mod:`app.services.models.version_files`.

The disk a project's versions use is the real bytes of the versions that still have files: the
artifact's (``artifact_size``, recorded when the version was registered) and its own int8
copy's (``int8_size``, measured by the pass once the copy is built; until then the copy's
``size_mb`` as its parity check recorded it). The base encoder's shared int8 copy (``base/``)
belongs to no project: it is neither counted nor ever removed. A retrain of a project whose
versions already use its budget (the deployment's ``INTENT_STUDIO_VERSION_DISK_MB``) is refused
where the request is validated (:func:`check_budget`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from app.access import ProjectHandle
from app.config import ENV_VERSION_DISK_MB
from core.evaluation.version_metrics import VersionMetrics
from storage.errors import ConflictError
from storage.tables import ModelVersion
from storage.versions import FilesRemoved

# Why a version keeps its files (the rule's words; the Versions panel's "files" column).
ACTIVE = "active"
IN_USE = "used by a retrain"
PINNED = "pinned"
ACTIVATED = "activated by hand"
EXPORTED = "exported"
# Why a version has no files any more (recorded on its row: ModelVersion.files_removed).
BY_RULE = "its files were removed by the retention rule"
KEPT_BACK = (
    "an automatic retrain kept it back (its gate did not promote it): its files were removed "
    "when its job ended"
)
# What never belongs to a project: the base encoder's shared int8 copy.
SHARED_PREFIX = "base/"


def newest_words(n: int) -> str:
    """The rule's reason for the newest versions: ``newest 3``."""
    return f"newest {n}"


@dataclass(frozen=True)
class Facts:
    """What the rule reads of one version."""

    version: int
    has_files: bool = True
    pinned: bool = False
    activated: bool = False  # made active by a person (a rollback or an activation)
    exported: bool = False  # a bundle of it, or the report while it served
    kept_back: bool = False  # an automatic retrain's version its gate did not promote


def rule(
    versions: Iterable[Facts], *, active: int | None, newest: int, in_use: Collection[int] = ()
) -> dict[int, str | None]:
    """Why each version keeps its files, by version (None: its files go). ``active``: the
    project's active version; ``newest``: how many of the newest versions that have files (and
    were not kept back automatically) are kept; ``in_use``: versions a job of the project uses.

    Example:
        >>> kept = rule(
        ...     [Facts(1, activated=True), Facts(2), Facts(3, pinned=True), Facts(4),
        ...      Facts(5, exported=True), Facts(6), Facts(7, kept_back=True), Facts(8)],
        ...     active=6, newest=2)
        >>> kept
        {8: 'newest 2', 7: None, 6: 'active', 5: 'exported', 4: None, 3: 'pinned', 2: None, 1: 'activated by hand'}
    """
    out: dict[int, str | None] = {}
    counted = 0
    for f in sorted(versions, key=lambda v: v.version, reverse=True):
        recent = f.has_files and not f.kept_back and counted < newest
        counted += f.has_files and not f.kept_back
        if f.version == active:
            out[f.version] = ACTIVE
        elif f.version in in_use:
            out[f.version] = IN_USE
        elif f.pinned:
            out[f.version] = PINNED
        elif f.activated:
            out[f.version] = ACTIVATED
        elif f.exported:
            out[f.version] = EXPORTED
        else:
            out[f.version] = newest_words(newest) if recent else None
    return out


def leaves_nothing(trigger: str | None, promoted: bool | None) -> bool:
    """Whether a version's files go when its job ends, whatever the rule keeps: an automatic
    retrain's version its gate did not promote (issue 71 item 4; nobody asked for it, and the
    next labels start another). A kept-back version someone asked for stays, to be activated by
    hand.

    >>> leaves_nothing("auto", False), leaves_nothing("auto", True), leaves_nothing("manual", False)
    (True, False, False)
    """
    return trigger == "auto" and promoted is False


def facts(mv: ModelVersion) -> Facts:
    """What the rule reads of a version's row."""
    m = VersionMetrics.from_dict(mv.metrics)
    return Facts(
        version=mv.id,
        has_files=not mv.files_removed,
        pinned=bool(mv.pinned),
        activated=mv.activated_at is not None,
        exported=mv.exported_at is not None,
        kept_back=leaves_nothing(m.extra.get("trigger"), m.gate.get("passed")),
    )


def removal_words(f: Facts) -> str:
    """Why the rule removes a version's files, as its row records it."""
    return KEPT_BACK if f.kept_back else BY_RULE


def int8_rel(mv: ModelVersion) -> str | None:
    """The version's own int8 copy's artifact (None: it has none of its own)."""
    own = VersionMetrics.from_dict(mv.metrics).int8.get("artifact")
    return own if isinstance(own, str) and own and own != mv.artifact_path else None


def rels(mv: ModelVersion) -> list[str]:
    """The artifacts that are the version's own files: its artifact and its int8 copy's (never
    the base encoder's shared copy)."""
    found = [mv.artifact_path, int8_rel(mv)]
    return [r for r in found if r and not r.startswith(SHARED_PREFIX)]


def int8_bytes(mv: ModelVersion) -> int:
    """Bytes of the version's own int8 copy: measured (``int8_size``), else what its parity
    check recorded of the copy's model (``size_mb``), 0 when it has none."""
    if int8_rel(mv) is None:
        return 0
    if mv.int8_size is not None:
        return int(mv.int8_size)
    size_mb = VersionMetrics.from_dict(mv.metrics).int8.get("size_mb")
    return round(float(size_mb) * 1e6) if isinstance(size_mb, int | float) else 0


def version_bytes(mv: ModelVersion) -> int:
    """The disk the version's own files use now (0 once they are removed)."""
    if mv.files_removed:
        return 0
    return int(mv.artifact_size or 0) + int8_bytes(mv)


def size_words(n: float) -> str:
    """Bytes for people, in powers of ten as the disk's maker counts them.

    Example:
        >>> size_words(1_100_000_000), size_words(10**9), size_words(312_400_000), size_words(4_200)
        ('1.1 GB', '1 GB', '312 MB', '4.2 kB')
    """
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            shown = f"{n / size:.1f}" if n < 10 * size else f"{n / size:.0f}"
            return f"{shown.removesuffix('.0')} {unit}"
    return f"{int(n)} bytes"


@dataclass(frozen=True)
class Disk:
    """The disk a project's versions use, and its budget."""

    used: int  # bytes of the versions that have files
    budget: int  # bytes
    with_files: int  # versions that have files
    versions: int  # every version of the history

    @property
    def over(self) -> bool:
        return self.used >= self.budget

    def words(self) -> str:
        """One line for the Versions panel, the CLI and REST."""
        return (
            f"Versions use {size_words(self.used)} of this project's {size_words(self.budget)} "
            f"budget on disk ({self.with_files} of {self.versions} version(s) have files)."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.used,
            "budget_bytes": self.budget,
            "with_files": self.with_files,
            "versions": self.versions,
            "words": self.words(),
        }


def disk(rows: Iterable[ModelVersion], budget_mb: int) -> Disk:
    """The disk the versions ``rows`` (a project's history) use, against ``budget_mb``."""
    rows = list(rows)
    with_files = [mv for mv in rows if not mv.files_removed]
    return Disk(
        used=sum(version_bytes(mv) for mv in with_files),
        budget=budget_mb * 1_000_000,
        with_files=len(with_files),
        versions=len(rows),
    )


class OverBudget(ConflictError):
    """A retrain of a project whose versions already use its disk budget (409 over REST)."""


def check_budget(p: ProjectHandle, used: Disk) -> None:
    """Refuse a retrain of ``p`` when its versions already use their disk budget.

    Raises:
        OverBudget: the message says what uses the disk and how to free it.
    """
    if used.over:
        raise OverBudget(
            f"Project {p.name!r}'s versions use {size_words(used.used)} of its "
            f"{size_words(used.budget)}: unpin versions or remove their files (Train tab, "
            f"Versions), or raise the budget ({ENV_VERSION_DISK_MB}). Nothing was queued."
        )


def require_files(mv: ModelVersion, doing: str) -> None:
    """Refuse to ``doing`` (``activate``, ``export``, ``compare``...) a version whose files were
    removed, with why they were.

    Raises:
        storage.versions.FilesRemoved: its row says why it has no files.
    """
    if mv.files_removed:
        raise FilesRemoved(f"v{mv.id} cannot be {doing}: {mv.files_removed}.")


def files_words(mv: ModelVersion, kept: str | None) -> str:
    """The Versions panel's "files" cell: why the version keeps its files (``kept: pinned``),
    that the next pass removes them, or that they were removed (and by what)."""
    if mv.files_removed:
        if mv.files_removed == KEPT_BACK:
            return "removed: kept back"
        return "removed by the rule" if mv.files_removed == BY_RULE else "removed by hand"
    return f"kept: {kept}" if kept else "removed at the next pass"


def history_fields(
    rows: Iterable[ModelVersion], *, active: int | None, newest: int, in_use: Collection[int]
) -> dict[int, dict[str, Any]]:
    """What the history shows of each version's files, by version: ``pinned``, ``files`` (the
    panel's cell, :func:`files_words`), ``files_removed`` (why it has none, or None) and
    ``disk_bytes`` (what its files use now)."""
    rows = list(rows)
    kept = rule([facts(mv) for mv in rows], active=active, newest=newest, in_use=in_use)
    return {
        mv.id: {
            "pinned": bool(mv.pinned),
            "files": files_words(mv, kept[mv.id]),
            "files_removed": mv.files_removed,
            "disk_bytes": version_bytes(mv),
        }
        for mv in rows
    }
