"""The data directory and everything the app writes in it belong to the app's account alone
(issue 73 item 2): the folder ``0700``, its files ``0600``.

The database holds every project's rows and every user's password hash; the directory was
``0755``, ``studio.db``, its WAL and ``queue.db`` ``0644``, and the model files alike, so any
other account of the machine read them. Now:

- every entry point (``serve``, ``worker``, every CLI command: :func:`app.cli.main`) runs under
  the umask ``077`` (:func:`keep_private`), so whatever the process creates (SQLite's files and
  their WAL, the queue, model files, the cache, downloads, Gradio's uploads, a backup) is
  private; the worker ``serve`` starts inherits it;
- the data directory is created ``0700`` whoever creates it (:func:`app.config.private_dir`,
  where it is chosen), what a restore writes is made private (:func:`make_private`), and a
  backup archive is ``0600`` from its first byte (:data:`FILE_MODE`);
- a data directory that others may read (one from before, a volume made by hand) is said at
  start, once, with the command that closes it (:func:`exposure_warning`); the app changes no
  mode of files it did not create.

Example:
    >>> import tempfile
    >>> folder = private_dir(Path(tempfile.mkdtemp()) / "data")
    >>> oct(folder.stat().st_mode & 0o777), exposed(folder)
    ('0o700', [])
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from app.config import DIR_MODE, private_dir

PRIVATE_UMASK = 0o077  # nothing for the group, nothing for others
FILE_MODE = 0o600
OTHERS = 0o077  # the bits that let another account in
SHOWN = 5  # entries named in the warning at most

__all__ = ["DIR_MODE", "FILE_MODE", "exposure_warning", "keep_private", "make_private"]
__all__ += ["private_dir"]


def keep_private() -> int:
    """From now on every file and folder this process (and any process it starts) creates is
    its account's alone: the umask ``077``. Returns the umask before."""
    return os.umask(PRIVATE_UMASK)


def make_private(root: Path) -> None:
    """``root`` and everything under it private: folders ``0700``, files ``0600`` (what a
    restore writes); symlinks are left alone (their mode is their target's)."""
    os.chmod(root, DIR_MODE)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                os.chmod(path, DIR_MODE)
            elif stat.S_ISREG(mode):
                os.chmod(path, FILE_MODE)


def exposed(data_dir: Path) -> list[str]:
    """What of ``data_dir`` another account may read or enter: the folder itself and each entry
    directly in it (``studio.db``, its WAL, ``queue.db``, ``artifacts/``, ``cache/``,
    ``downloads/``...) whose mode lets its group or anyone else in, as ``name 0644``."""
    found = []
    try:
        entries = [data_dir, *sorted(data_dir.iterdir())]
    except OSError:
        return []
    for entry in entries:
        try:
            mode = entry.lstat().st_mode
        except OSError:
            continue
        if mode & OTHERS and not stat.S_ISLNK(mode):
            name = "the folder" if entry == data_dir else entry.name
            found.append(f"{name} {stat.S_IMODE(mode):04o}")
    return found


def exposure_warning(data_dir: Path) -> str | None:
    """One line for the operator when other accounts may read ``data_dir`` (None: private).

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> folder.chmod(0o755)
        >>> exposure_warning(folder).startswith(f"The data directory {folder} is readable")
        True
    """
    found = exposed(data_dir)
    if not found:
        return None
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return (
        f"The data directory {data_dir} is readable by other accounts of this machine "
        f"({', '.join(found[:SHOWN])}{more}): it holds every project and every password hash. "
        f"Make it private: chmod -R go-rwx {data_dir}"
    )
