"""One step of `make install` / `make run`, said before it starts and never silent for long.

    python3 .ci/step.py "Installing torch 2.13 (the CPU build)" -- .venv/bin/python -m pip ...

Prints ``==> WHAT``, runs the command with its output captured, and every :data:`EVERY`
seconds prints how long it has run and the last thing it said that tells where it is (pip's
"Collecting …", "Downloading …", "Installing collected packages …"; any other line of a command
that says its steps). Warnings and notices are not shown (pip's "Location … is ignored", "running
pip as root", setuptools' build warnings: 106 of a first install's 124 lines, issue 65); a line
that says ``ERROR`` is shown at once, and when the command fails, the end of its output is
shown with its exit status, which the step exits with. Standard library only: it runs before the
virtual environment exists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

EVERY = float(os.environ.get("STEP_PROGRESS_EVERY", "30"))
TAIL = 40  # lines of a failed command's output shown
# What tells where a step is: pip's or uv's own words for what it does, or a line of our own
# steps'.
_PROGRESS = re.compile(
    r"^\s*(Collecting|Downloading|Processing|Obtaining|Preparing|Building|Installing|"
    r"Using cached|Requirement already|Successfully|Attempting|Looking in|Resolved|Prepared|"
    r"Installed|Built|-> )"
)
_NOISE = re.compile(r"warning|notice|deprecat|^\s*!!|^\s*\*{8}|^\s*$", re.IGNORECASE)
_ERROR = re.compile(r"^\s*(ERROR|error:|Traceback)")


def span(seconds: float) -> str:
    """``95`` → ``"1 min 35 s"``."""
    s = int(seconds)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") != 1:
        print('usage: step.py "what it does" -- command ...', file=sys.stderr)
        return 2
    what, command = argv[0], argv[2:]
    print(f"==> {what}", flush=True)
    start = time.monotonic()
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
    )
    seen: list[str] = []
    latest = [""]
    done = threading.Event()

    def beat() -> None:
        while not done.wait(EVERY):
            where = f": {latest[0][:110]}" if latest[0] else ""
            print(f"    … {span(time.monotonic() - start)}{where}", flush=True)

    ticker = threading.Thread(target=beat, daemon=True)
    ticker.start()
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.rstrip()
        seen.append(line)
        del seen[:-500]
        if _ERROR.match(line):
            print(f"    {line}", flush=True)
        elif _PROGRESS.match(line):
            latest[0] = line.strip().removeprefix("-> ")
        elif not _NOISE.search(line) and line.startswith("    "):
            latest[0] = line.strip()
    code = proc.wait()
    done.set()
    ticker.join()
    took = span(time.monotonic() - start)
    if code:
        shown = [x for x in seen if not _NOISE.search(x) or _ERROR.match(x)][-TAIL:]
        print("\n".join(f"    {x}" for x in shown), file=sys.stderr)
        print(f"    failed after {took} (exit status {code})", file=sys.stderr, flush=True)
        return code
    print(f"    done in {took}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
