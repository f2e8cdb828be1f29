"""Files the app generates for someone to download (reports, model bundles, data exports).

Each one is written into its own fresh folder under ``<data-dir>/downloads/`` and handed to the
user from there, straight from that folder (not copied into Gradio's cache: issue 56 row 10, the
copies sat outside the cap below for a day). The folder names the project the file came from
(:data:`PROJECT_FILE`): the web app serves it only to someone who may read that project *now*
(:class:`app.perimeter.file_gate.FileGate`), so a member removed from a project cannot
fetch its report any more. They are not kept: whenever a new one is made, the folder is swept, removing
what is older than :data:`TTL_S` and then, oldest first, what exceeds :data:`MAX_BYTES` in all
(a report holds the project's utterances, so copies should not pile up on the server). Reports
that older versions left in ``<data-dir>/reports/`` are swept by the same rule.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> path = new_download(root, "shop report.html")
    >>> path.parent.parent == root, path.name
    (True, 'shop report.html')
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path

from app.config import Settings
from app.perimeter.file_gate import PROJECT_FILE, download_project

__all__ = ["download_path", "download_project", "new_download", "sweep"]

logger = logging.getLogger(__name__)

TTL_S = 24 * 3600  # a download older than a day is removed
MAX_BYTES = 200 * 1024 * 1024  # and all of them together stay under 200 MiB
DOWNLOADS = "downloads"
LEGACY_REPORTS = "reports"  # where versions before this one wrote reports


def _size(entry: Path) -> int:
    if entry.is_file():
        return entry.stat().st_size
    return sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def sweep(
    folder: Path,
    *,
    ttl_s: float = TTL_S,
    max_bytes: int = MAX_BYTES,
    now: float | None = None,
) -> list[Path]:
    """Remove the entries of ``folder`` older than ``ttl_s`` seconds, then the oldest ones until
    the rest take at most ``max_bytes``. Returns what was removed (oldest first).

    Example:
        >>> sweep(Path("/nonexistent-folder"))
        []
    """
    if not folder.is_dir():
        return []
    now = time.time() if now is None else now
    entries = sorted(
        ((e.stat().st_mtime, e) for e in folder.iterdir()), key=lambda me: (me[0], me[1].name)
    )
    removed: list[Path] = []
    kept: list[tuple[Path, int]] = []
    for mtime, entry in entries:
        if now - mtime > ttl_s:
            removed.append(entry)
        else:
            kept.append((entry, _size(entry)))
    total = sum(size for _, size in kept)
    for entry, size in kept:
        if total <= max_bytes:
            break
        removed.append(entry)
        total -= size
    for entry in removed:
        _remove(entry)
    if removed:
        logger.info("swept %d old download(s) from %s", len(removed), folder)
    return removed


def new_download(folder: Path, filename: str, project_id: int | None = None) -> Path:
    """Sweep ``folder``, then return ``<folder>/<fresh subfolder>/<filename>`` to write to; the
    subfolder names ``project_id`` (:func:`download_project`).

    Example:
        >>> root = Path(tempfile.mkdtemp())
        >>> download_project(new_download(root, "r.html", 7)), download_project(new_download(root, "x"))
        (7, None)
    """
    folder.mkdir(parents=True, exist_ok=True)
    sweep(folder)
    fresh = Path(tempfile.mkdtemp(prefix="dl-", dir=folder))
    if project_id is not None:
        (fresh / PROJECT_FILE).write_text(str(int(project_id)), encoding="ascii")
    return fresh / filename


def download_path(settings: Settings, filename: str, project_id: int | None = None) -> Path:
    """Where the app writes a file of project ``project_id`` for the user to download
    (:func:`new_download` in ``<data-dir>/downloads/``); sweeps the reports older versions left
    behind too."""
    sweep(settings.data_dir / LEGACY_REPORTS)
    return new_download(settings.data_dir / DOWNLOADS, filename, project_id)
