"""What the benches that drive checkouts share (issue 67 item 8): a peer commit archived into a
folder, a checkout's revision, the environment a checkout's processes run in, a BANKING77 project
imported by a checkout's own CLI, the load average, the command-line options that name the
checkouts (and those of a bench over files), a script run in a checkout, a report written, and
the lines a script run inside any checkout starts with to find the piece of its
serving state a function takes (:data:`PIECES`)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "banking77"

# Put at the head of a script run in a checkout (``python -c``): ``_piece(ctx, fn)`` is what
# ``fn`` takes of the serving state in any checkout (issue 48: the piece its first parameter
# names, else the state itself), ``_open(ctx, name)`` the project as its services take it (a
# handle since issue 43, a name before).
PIECES = r"""
import inspect as _inspect


def _piece(ctx, fn):
    first = next(iter(_inspect.signature(fn).parameters))
    return getattr(ctx, first) if first in ("db", "live", "factories", "maps", "training") else ctx


try:
    from app.access import open_project as _open_project

    def _open(ctx, name):
        return _open_project(_piece(ctx, _open_project), name)
except ImportError:  # a checkout before the project handle (issue 43): services took a name
    def _open(ctx, name):
        return name
"""


def checkout_options(ap: argparse.ArgumentParser, *, repeats: int, what: str) -> None:
    """``--data``, ``--code`` (repeatable), ``--peer`` (a commit, repeatable) and ``--repeats``
    (``what`` says what is repeated)."""
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument(
        "--code", type=Path, action="append", default=[], help="a checkout (repeatable)"
    )
    ap.add_argument("--peer", action="append", default=[], help="a commit of this repository")
    ap.add_argument("--repeats", type=int, default=repeats, help=what)


def file_checkouts(
    argv: list[str] | None, description: str | None, prefix: str
) -> tuple[argparse.Namespace, Path, list[Path]]:
    """The options of a bench that runs files through checkouts (the files, ``--code`` and
    ``--peer`` repeatable, ``--out``) as parsed, a new work folder (named ``prefix...``) and the
    checkouts they name: the peers archived into that folder, then the ``--code`` folders."""
    ap = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("files", type=Path, nargs="+")
    ap.add_argument("--code", type=Path, action="append", default=[])
    ap.add_argument("--peer", action="append", default=[])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix=prefix))
    codes = [peer_checkout(rev, work) for rev in args.peer] + [c.resolve() for c in args.code]
    return args, work, codes


def run_script(code: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -c script args`` in the checkout ``code``, its own app on the path; a failure
    raises RuntimeError with the end of what it wrote to stderr."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{code}: {done.stderr[-3000:]}")
    return done


def write_report(report: dict[str, Any], out: Path | None) -> None:
    """The bench's report printed as JSON, and written to ``out`` when given."""
    print(json.dumps(report, indent=2))
    if out is not None:
        out.write_text(json.dumps(report, indent=2), encoding="utf-8")


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def revision(code: Path) -> str:
    """The checkout's commit (``+N``: N files under app/, core/, storage/ differ from it), or
    the name of a peer folder made by :func:`peer_checkout`."""
    marker = code / ".bench-commit"
    if marker.is_file():
        return marker.read_text().strip()
    git = ["git", "-C", str(code)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--", "app", "core", "storage"],
        capture_output=True,
        text=True,
    )
    changed = len(dirty.stdout.splitlines())
    return head.stdout.strip() + (f"+{changed}" if changed else "")


def peer_checkout(rev: str, work: Path) -> Path:
    """``rev`` of this repository, archived into ``work/peer-<sha>`` (made once)."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    place = work / f"peer-{sha}"
    if not (place / ".bench-commit").is_file():
        shutil.rmtree(place, ignore_errors=True)
        place.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", sha], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(place)], input=archive, check=True)
        (place / ".bench-commit").write_text(sha)
    return place


def environment(code: Path, data: Path, device: str) -> dict[str, str]:
    """The environment of a checkout's process on the data directory ``data``."""
    env = {
        **os.environ,
        "INTENT_STUDIO_DATA_DIR": str(data),
        "PYTHONPATH": str(code),
        "TOKENIZERS_PARALLELISM": "false",
        "INTENT_STUDIO_DEVICE": device,
    }
    env.pop("INTENT_STUDIO_ARTIFACTS_URL", None)
    return env


def build(csv: Path, code: Path, place: Path, device: str) -> Path:
    """The project imported by ``code`` into ``place/pristine`` (reused when there)."""
    pristine = place / "pristine"
    if (place / "built").is_file() and pristine.is_dir():
        return pristine
    shutil.rmtree(place, ignore_errors=True)
    place.mkdir(parents=True)
    env = environment(code, pristine, device)
    done = subprocess.run(
        [sys.executable, "-m", "app", "import", str(csv), "--project", PROJECT],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"import failed (rc {done.returncode}):\n{done.stderr[-4000:]}")
    (place / "built").write_text("")
    return pristine
