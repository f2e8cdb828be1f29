"""Projects of a log dump's size for the benches (issue 72 item 7): 770 labelled BANKING77
questions (the 10-shot seed-0 training file), BANKING77's 3,080 test questions, and the rest
unlabelled "logs", read from the public sets in ``../shared/data`` (never copied here).

The logs are every other public utterance first: BANKING77's other training questions, CLINC150's
train, val and test questions and its out-of-scope ones, NLU++'s banking and hotels utterances
(36,013 texts after the 3,850 labelled ones; 39,863 rows in all). A project larger than that
(60k, 250k) adds reproducible variations of those logs: each one a base log chosen by a seeded
generator and rewritten by a seeded recipe, as people type into a chat box: a greeting or lead-in
before it ("hi, ", "quick question: "...), a tail after it (" thanks", " asap"...), lower case,
no final punctuation, one typo (two letters of a word swapped), a filler word ("like", "um"),
or two logs of the same source intent joined ("... and also ..."). A variation that is a text
already made is drawn again, so every row is a new text (the app keeps one row per text). The
rows are in a seeded order, the labelled first (as an import of a curated sample then a dump
would put them) and the logs shuffled, variations among them. The same size and seed give the
same rows, byte for byte.

A file holds at most :data:`app.formats.common.MAX_ROWS` rows: :func:`write_parts` writes a large
project as several CSV files (``text,label,split``) of at most :data:`PART_ROWS` each, imported
one after another.

Usage:
    .venv/bin/python -m bench.dump_data --sizes 4000,25000 --out bench/results/dump
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import random
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
SIZES = (4_000, 25_000, 60_000, 250_000)
PART_ROWS = 100_000  # rows per CSV file (an import takes at most 200,000)

PREFIXES = (
    "hi, ",
    "hello, ",
    "hey there, ",
    "good morning, ",
    "quick question: ",
    "excuse me, ",
    "sorry to bother you but ",
    "um ",
    "ok so ",
    "please help: ",
    "i need help, ",
    "can you help? ",
    "hi team, ",
    "yo ",
    "question - ",
)
SUFFIXES = (
    " thanks",
    " thank you",
    " please",
    " asap",
    " thx",
    "?",
    "??",
    " !",
    " cheers",
    " - sent from my phone",
    " any idea?",
    " pls help",
    " :(",
    " thanks in advance",
)
FILLERS = ("like", "um", "just", "actually", "basically", "really")


@dataclass(frozen=True)
class Row:
    """One row of a bench project: its text, intent (empty for a log), split, and the source
    it came from with its intent there (``origin``/``source``: the bench's, never imported)."""

    text: str
    label: str
    split: str
    origin: str
    source: str
    base: str = ""  # a variation's: the log it was made from (the bench's, never imported)


def _read(path: Path, column: str = "label") -> list[tuple[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [(r["text"], r[column]) for r in csv.DictReader(fh)]


def _clean(text: str) -> str:
    return unicodedata.normalize("NFC", " ".join(text.split()))


def labelled(data: Path) -> list[Row]:
    """The 770 labelled training questions, then BANKING77's 3,080 test questions."""
    folder = data / "banking77"
    train = [
        Row(_clean(t), y, "train", "banking77", y)
        for t, y in _read(folder / "train_10shot_seed0.csv")
    ]
    test = [Row(_clean(t), y, "test", "banking77", y) for t, y in _read(folder / "test.csv")]
    return _unique([*train, *test])


def logs(data: Path) -> list[Row]:
    """Every other public utterance, unlabelled, in file order (the shuffle comes later)."""
    found: list[Row] = []
    for t, y in _read(data / "banking77" / "train.csv"):
        found.append(Row(_clean(t), "", "unlabelled", "banking77", y))
    clinc = data / "clinc150"
    for name in ("train", "val", "test", "train_oos", "val_oos", "test_oos"):
        for t, y in _read(clinc / f"{name}.csv"):
            found.append(Row(_clean(t), "", "unlabelled", "clinc150", y))
    for name in ("banking", "hotels"):
        for t, y in _read(data / "nlupp" / f"{name}.csv", "labels"):
            found.append(Row(_clean(t), "", "unlabelled", f"nlupp-{name}", y))
    return found


def _unique(rows: list[Row], taken: set[str] | None = None) -> list[Row]:
    seen = taken if taken is not None else set()
    out = []
    for r in rows:
        if r.text and r.text not in seen:
            seen.add(r.text)
            out.append(r)
    return out


def _typo(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    long = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if not long:
        return text
    i = rng.choice(long)
    w = words[i]
    j = rng.randrange(1, len(w) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


def _filler(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    at = rng.randrange(0, len(words) + 1)
    return " ".join([*words[:at], rng.choice(FILLERS), *words[at:]])


def vary(base: Row, partner: Row | None, rng: random.Random) -> Row:
    """One variation of ``base`` (``partner``: another log of its source intent to join it
    with, or None), by a recipe ``rng`` draws."""
    text = base.text
    if partner is not None and rng.random() < 0.1:
        text = f"{text.rstrip('.?!')} and also {partner.text[:1].lower()}{partner.text[1:]}"
    if rng.random() < 0.5:
        text = rng.choice(PREFIXES) + text[:1].lower() + text[1:]
    if rng.random() < 0.5:
        text = text.rstrip(".?!") + rng.choice(SUFFIXES)
    if rng.random() < 0.3:
        text = text.lower()
    if rng.random() < 0.3:
        text = _typo(text, rng)
    if rng.random() < 0.2:
        text = _filler(text, rng)
    if text == base.text:  # nothing drawn: a lead-in at least
        text = rng.choice(PREFIXES) + text
    return Row(_clean(text), "", "unlabelled", f"{base.origin}+variation", base.source, base.text)


def variations(bases: list[Row], n: int, taken: set[str], seed: int) -> list[Row]:
    """``n`` new texts (none in ``taken``, which they join), each a variation of a base log."""
    rng = random.Random(seed)
    by_source: dict[str, list[Row]] = {}
    for b in bases:
        by_source.setdefault(f"{b.origin}/{b.source}", []).append(b)
    out: list[Row] = []
    while len(out) < n:
        base = bases[rng.randrange(len(bases))]
        mates = by_source[f"{base.origin}/{base.source}"]
        partner = mates[rng.randrange(len(mates))] if len(mates) > 1 else None
        row = vary(base, partner if partner is not base else None, rng)
        if row.text and row.text not in taken and len(row.text) <= 2000:
            taken.add(row.text)
            out.append(row)
    return out


def build(data: Path, size: int, *, seed: int = 0) -> list[Row]:
    """The rows of a project of ``size`` rows: the labelled ones, then the logs in a seeded
    order (the public ones, then variations when they are not enough).

    Raises:
        ValueError: a size below the labelled rows' number.
    """
    first = labelled(data)
    if size < len(first):
        raise ValueError(f"A bench project holds the {len(first)} labelled rows at least.")
    taken = {r.text for r in first}
    public = _unique(logs(data), taken)
    want = size - len(first)
    if want <= len(public):
        chosen = random.Random(seed).sample(public, want)
    else:
        more = variations(public, want - len(public), taken, seed + 1)
        chosen = [*public, *more]
        random.Random(seed).shuffle(chosen)
    return [*first, *chosen]


def write_parts(rows: list[Row], folder: Path, name: str) -> list[Path]:
    """``rows`` as CSV files ``<name>-<k>.csv`` (``text,label,split``) of at most
    :data:`PART_ROWS` rows each, in order; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, start in enumerate(range(0, len(rows), PART_ROWS)):
        path = folder / f"{name}-{k}.csv"
        with path.open("w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["text", "label", "split"])
            w.writerows((r.text, r.label, r.split) for r in rows[start : start + PART_ROWS])
        paths.append(path)
    return paths


def digest(rows: list[Row]) -> str:
    """A short hash of the rows' texts, labels and splits in order (same rows, same digest)."""
    h = hashlib.sha256()
    for r in rows:
        h.update(f"{r.text}\t{r.label}\t{r.split}\n".encode())
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "dump")
    args = ap.parse_args(argv)
    for size in (int(s) for s in args.sizes.split(",")):
        rows = build(args.data, size, seed=args.seed)
        parts = write_parts(rows, args.out, f"dump-{size}")
        kinds = {s: sum(r.split == s for r in rows) for s in ("train", "test", "unlabelled")}
        made = sum("variation" in r.origin for r in rows)
        print(
            f"{size}: {len(rows)} rows {kinds}, {made} variations, digest {digest(rows)}, {len(parts)} file(s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
