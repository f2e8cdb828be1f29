"""Benchmark: does a real agent come back as it went out? (issue 74 item 1)

Each file (an agent export: a zip, a folder, a ``.json``; a Rasa ``nlu.yml``) is imported into a
new project and exported again, unedited, by each checkout's CLI (``--peer REV``, ``--code PATH``:
a child process of that code runs ``intent-studio import`` and ``export`` on a fresh data
directory, the real path: SQLite, the slot book, the kept agent). The table says whether the
import was accepted, the files the export added, lost and changed against the input (a zip's or
folder's files; hidden ones a zip tool adds, ``__MACOSX/`` and ``.DS_Store``, aside: an import
reads past them), and the "Left out" notes of an export that changed nothing.

Usage:
    python -m bench.agents_round_trip --peer main --code . agent.zip app.json data/nlu.yml
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench._checkouts import file_checkouts, revision, run_script, write_report

CHILD = r"""
import io, json, sys, tempfile, zipfile, contextlib
from pathlib import Path
from app.cli import main
src = Path(sys.argv[1])
def files(p):
    if p.is_dir():
        return {f.relative_to(p).as_posix(): f.read_bytes() for f in p.rglob("*") if f.is_file()}
    if p.suffix == ".zip":
        with zipfile.ZipFile(io.BytesIO(p.read_bytes())) as zf:
            return {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}
    return {"file": p.read_bytes()}
def visible(fs):
    return {k: v for k, v in fs.items()
            if not any(x.startswith(".") or x == "__MACOSX" for x in k.split("/"))}
with tempfile.TemporaryDirectory() as tmp:
    data = ["--data-dir", str(Path(tmp) / "data")]
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = main([*data, "import", str(src), "--project", "bot"])
    if code != 0:
        print(json.dumps({"imported": False, "said": said.getvalue().strip()[-300:]}))
        sys.exit(0)
    suffix = ".yml" if src.suffix in (".yml", ".yaml") else (".json" if src.suffix == ".json" else ".zip")
    out = Path(tmp) / f"out{suffix}"
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        main([*data, "export", "--project", "bot", "-o", str(out)])
    want, got = visible(files(src)), files(out)
    if len(want) == 1 and len(got) == 1:
        want, got = {"file": next(iter(want.values()))}, {"file": next(iter(got.values()))}
    notes = [n for n in said.getvalue().split(" Note: ")[1:] if n.startswith("Left out")]
    print(json.dumps({
        "imported": True,
        "files": len(want),
        "added": sorted(set(got) - set(want)),
        "lost": sorted(set(want) - set(got)),
        "changed": sorted(k for k in want if k in got and want[k] != got[k]),
        "left_out_notes": [n.strip()[:200] for n in notes],
    }))
"""


def run(code: Path, src: Path) -> dict[str, Any]:
    done = run_script(code, CHILD, str(src))
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    args, _, codes = file_checkouts(argv, __doc__, "bench-agents-")
    report: dict[str, Any] = {}
    print(f"{'file':<34}{'checkout':<22}{'same':>6}{'added':>7}{'lost':>6}{'changed':>9}  notes")
    for src in args.files:
        for code in codes:
            got = run(code, src.resolve())
            name = revision(code) or code.name
            report.setdefault(src.name, {})[name] = got
            if not got["imported"]:
                print(f"{src.name[:33]:<34}{name[:21]:<22}  refused: {got['said'][:80]}")
                continue
            same = not (got["added"] or got["lost"] or got["changed"])
            print(
                f"{src.name[:33]:<34}{name[:21]:<22}{'yes' if same else 'no':>6}"
                f"{len(got['added']):>7}{len(got['lost']):>6}{len(got['changed']):>9}  "
                f"{'; '.join(n[:60] for n in got['left_out_notes'])}"
            )
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
