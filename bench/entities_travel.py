"""Benchmark: do a bot's entity annotations and slot references travel? (issue 66 items 1 and 2,
issue 74 item 2)

Each file (a Rasa ``nlu.yml``, an agent export: anything the app imports) is read, exported to
every platform format and to CSV, and read back, by each checkout (``--peer REV``, ``--code
PATH``: a child process of that code runs the app's own ``read_any`` and ``write_any``). The
table counts the annotations of the file (text, span, entity type), those that come back with
their entity type, those that come back with their role too, and the ``{Slot}`` references
still in the texts (a Lex export of what came back; -: the file has none). The JSON also counts,
per format, the annotations back as *another* entity type, and those whose inline value or
group did not come back, each with whether the export's notes name it (``said``).

Usage:
    python -m bench.entities_travel --peer main --code . data/nlu/nlu.yml bot.zip
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench._checkouts import file_checkouts, revision, run_script, write_report

FORMATS = ("dialogflow-es", "dialogflow-cx", "luis", "clu", "watson", "lex-v2", "csv")
CHILD = r"""
import json, re, sys, tempfile, zipfile, io
from pathlib import Path
from app.formats import read_any, write_any, agent_format
src, formats = Path(sys.argv[1]), sys.argv[2].split(",")
ref = re.compile(r"\{[0-9A-Za-z][0-9A-Za-z_-]*\}")
parsed = read_any(src)
intents = {n: parsed.descriptions.get(n, "") for r in parsed.rows for n in r.labels}
def spans(slots):
    return [(t, e["start"], e["end"], e["entity"], e.get("role")) for t, es in slots.entities.items() for e in es]
def back_values(slots):
    return {(t, e["start"], e["end"], e["entity"], e.get("value")) for t, es in slots.entities.items() for e in es}
def lex_refs(payload):
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        return sum(len(ref.findall(s["utterance"])) for n in zf.namelist() if n.endswith("/Intent.json")
                   for s in json.loads(zf.read(n)).get("sampleUtterances") or [])
out = {"source": len(spans(parsed.slots))}
with tempfile.TemporaryDirectory() as tmp:
    for fmt in formats:
        suffix = ".csv" if fmt == "csv" else "." + agent_format(fmt).container
        path = Path(tmp) / f"out-{fmt}{suffix}"
        kw = {} if fmt == "csv" else {"format": fmt}
        notes = write_any(parsed.rows, path, intents, parsed.slots, **kw)
        back = read_any(path)
        got = spans(back.slots)
        back_full = back.slots
        typed = {g[:4] for g in got}
        lex = Path(tmp) / f"lex-{fmt}.zip"
        write_any(back.rows, lex, {n: "" for r in back.rows for n in r.labels}, back.slots, format="lex-v2")
        back = {g[:3]: g for g in got}
        full = [(t, e["start"], e["end"], e["entity"], e.get("value"), e.get("group"))
                for t, es in parsed.slots.entities.items() for e in es]
        other = [s for s in full if s[:3] in back and back[s[:3]][3] != s[3]]
        said = " ".join(notes)
        out[fmt] = {
            "typed": sum(1 for s in spans(parsed.slots) if s[:4] in typed),
            "with_role": sum(1 for s in spans(parsed.slots) if s in set(got)),
            "lex_references": lex_refs(lex.read_bytes()),
            "other_type": len(other),
            "other_type_said": bool(other) and "another entity type" in said,
            "values": sum(1 for s in full if s[4] and s[4] != s[0][s[1]:s[2]].strip()),
            "values_back": sum(1 for s in full if s[4] and s[4] != s[0][s[1]:s[2]].strip()
                               and (s[0], s[1], s[2], s[3], s[4]) in back_values(back_full)),
            "values_said": "the value of" in said,
            "groups": sum(1 for s in full if s[5]),
            "groups_said": "the group of" in said,
        }
print(json.dumps(out))
"""


def run(code: Path, src: Path, formats: tuple[str, ...]) -> dict[str, Any]:
    done = run_script(code, CHILD, str(src), ",".join(formats))
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    args, _, codes = file_checkouts(argv, __doc__, "bench-entities-")
    report: dict[str, Any] = {}
    for src in args.files:
        print(f"\n{src.name}: annotations typed / with role / Lex {{Slot}} references after it")
        print(f"{'checkout':<22}{'source':>8}" + "".join(f"{f:>22}" for f in FORMATS))
        for code in codes:
            got = run(code, src.resolve(), FORMATS)
            name = revision(code) or code.name
            report.setdefault(src.name, {})[name] = got
            cells = "".join(
                f"{got[f]['typed']:>8}/{got[f]['with_role']:<4}/{got[f]['lex_references']:<6}"
                for f in FORMATS
            )
            print(f"{name[:22]:<22}{got['source']:>8}{cells}")
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
