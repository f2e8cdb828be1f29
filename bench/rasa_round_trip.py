"""Benchmark: does a Rasa ``nlu.yml`` come back as it went out? (issue 66 item 3)

Each file is imported and exported again by each checkout (``--peer REV`` archives a commit of
this repository, ``--code PATH`` any checkout; a child process of that code runs the app's own
``read_any`` and ``write_any``, with the imported file kept as the project keeps it), and the
table counts, in the file and in its export: the bytes (identical or not), the intent items and
those named ``a+b`` (multi-intent), the ``synonym:``, ``regex:`` and ``lookup:`` items, the
example lines, the entity annotations, and repeated example lines.

Usage:
    python -m bench.rasa_round_trip --peer main --code . data/nlu.yml [more files]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from bench._checkouts import file_checkouts, revision, run_script, write_report

CHILD = r"""
import inspect, sys
from pathlib import Path
from app.formats import read_any, write_any
src, out = Path(sys.argv[1]), Path(sys.argv[2])
parsed = read_any(src)
kept = getattr(parsed, "agent", None)
options = {"kept": kept} if "kept" in inspect.signature(write_any).parameters else {}
notes = write_any(parsed.rows, out, parsed.descriptions, parsed.slots, **options)
print("\n".join(notes))
"""
_ITEM = re.compile(r"^\s*- (intent|synonym|regex|lookup):\s*(.*)$", re.MULTILINE)
_ANNOTATION = re.compile(r"\[[^\[\]\n]+\](\([^()\n]+\)|\{[^{}\n]*\})")


def counts(text: str) -> dict[str, int]:
    """What a Rasa file holds, counted from its lines."""
    items = _ITEM.findall(text)
    examples = [
        line.strip()[2:]
        for line in text.splitlines()
        if line.startswith("    - ") or line.strip().startswith("- text:")
    ]
    return {
        "intent items": sum(1 for k, _ in items if k == "intent"),
        "a+b intents": sum(1 for k, name in items if k == "intent" and "+" in name),
        "synonym items": sum(1 for k, _ in items if k == "synonym"),
        "regex items": sum(1 for k, _ in items if k == "regex"),
        "lookup items": sum(1 for k, _ in items if k == "lookup"),
        "example lines": len(examples),
        "annotations": len(_ANNOTATION.findall(text)),
        "repeated lines": len(examples) - len(set(examples)),
    }


def round_trip(code: Path, src: Path, work: Path) -> dict[str, Any]:
    out = work / f"{code.name}-{src.stem}.yml"
    done = run_script(code, CHILD, str(src), str(out))
    written = out.read_bytes()
    return {
        "identical": written == src.read_bytes(),
        "counts": counts(written.decode("utf-8")),
        "notes": [n for n in done.stdout.splitlines() if n],
    }


def main(argv: list[str] | None = None) -> int:
    args, work, codes = file_checkouts(argv, __doc__, "bench-rasa-")
    report: dict[str, Any] = {}
    for src in args.files:
        base = counts(src.read_text(encoding="utf-8"))
        report[src.name] = {"file": base}
        print(f"\n{src.name}")
        names = list(base)
        print(f"{'':<22}" + "".join(f"{n:>15}" for n in ["identical", *names]))
        print(f"{'the file':<22}{'':>15}" + "".join(f"{base[n]:>15}" for n in names))
        for code in codes:
            got = round_trip(code.resolve(), src.resolve(), work)
            report[src.name][revision(code)] = got
            c = got["counts"]
            print(
                f"{revision(code)[:22]:<22}{got['identical']!s:>15}"
                + "".join(f"{c[n]:>15}" for n in names)
            )
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
