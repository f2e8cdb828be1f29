"""Time the placing of a map's intent names (:func:`app.plots.labels.map_names`), in checkouts
side by side (this one, and ``--peer`` commits archived beside it), on maps of 77 and 300 intents
laid out as UMAP lays them out (a blob of 5-40 points per intent, blobs scattered over the
plane), for the smallest Map the app draws (1280x720) and for a 1440x900 screen. Each checkout's
placements are hashed: equal hashes say the names went to the same places.

A Map tab's render places every name once per figure (a quick PCA picture, then UMAP, and again
for the plot the page reports); a profile of the 300-intent browser test found 38 s of its
server's CPU in this placing.

Usage:
    .venv/bin/python -m bench.map_names --peer HEAD~1 --code .     # table + JSON
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench._checkouts import ROOT, load_average, peer_checkout, revision, run_script, write_report

ACTIONS = "cancel renew upgrade pause transfer report verify update close reset track refund"
OBJECTS = "card loan mortgage pension insurance subscription parcel invoice password address"

SCRIPT = r"""
import hashlib, json, sys, time
import numpy as np
from app.plots import labels
from app.plots.common import MapData
from app.plots.labels import PLOT_PX, map_names, ranges

names, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
out = []
for n in (77, 300):
    rng = np.random.default_rng(n)
    intents = names[:n]
    centres = rng.uniform(0, 10, size=(n, 2))
    sizes = rng.integers(5, 41, size=n)
    pts = np.concatenate([c + rng.normal(0, 0.25, size=(k, 2)) for c, k in zip(centres, sizes)])
    gold = [g for g, k in zip(intents, sizes) for _ in range(k)]
    m = MapData(pts, list(range(len(pts))), gold, gold, gold, ["train"] * len(pts))
    for plot, px in (("1280x720", PLOT_PX), ("1440x900", (1376.0, 560.0))):
        took = []
        for _ in range(repeats):
            getattr(labels, "_RECENT", {}).clear()  # a placing, not the one kept from before
            t0 = time.perf_counter()
            named = map_names(m, ranges(m), plot_px=px)
            took.append(time.perf_counter() - t0)
        digest = hashlib.sha256(json.dumps(named.annotations, sort_keys=True).encode()).hexdigest()
        out.append({"intents": n, "points": len(pts), "plot": plot,
                    "seconds": round(sorted(took)[len(took) // 2], 3),
                    "placed": len(named.annotations), "hidden": len(named.hidden),
                    "placement": digest[:12]})
print(json.dumps(out))
"""


def _names(count: int) -> list[str]:
    words = [f"{a}_{o}" for a in ACTIONS.split() for o in OBJECTS.split()]
    return [*words, *(f"{w}_again" for w in words)][:count]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--code", type=Path, action="append", default=[], help="a checkout")
    ap.add_argument("--peer", action="append", default=[], help="a commit of this repository")
    ap.add_argument("--repeats", type=int, default=3, help="placings of each map (median)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="map-names-"))
    codes = [peer_checkout(rev, work) for rev in args.peer] + [c.resolve() for c in args.code]
    rows = []
    for code in codes or [ROOT]:
        done = run_script(code, SCRIPT, json.dumps(_names(300)), str(args.repeats))
        rows += [{"code": revision(code), **r} for r in json.loads(done.stdout)]
    print(
        f"{'code':<14} {'intents':>7} {'points':>6} {'plot':>9} {'s':>7} {'placed':>6}  placement"
    )
    for r in rows:
        print(
            f"{r['code']:<14} {r['intents']:>7} {r['points']:>6} {r['plot']:>9} "
            f"{r['seconds']:>7.3f} {r['placed']:>6}  {r['placement']}"
        )
    write_report({"load": load_average(), "rows": rows}, args.out)


if __name__ == "__main__":
    main()
