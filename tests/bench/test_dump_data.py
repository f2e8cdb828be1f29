"""The benches' log-dump projects (issue 72 item 7): the sizes asked, 770 labelled BANKING77
questions and its test split, the rest unlabelled logs from the public sets and, past them,
seeded variations; the same rows byte for byte for the same size and seed; files an import
takes. No test builds 250,000 rows: 45,000 is past the public logs."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from bench import dump_data

pytestmark = pytest.mark.fast


def test_the_projects_have_the_sizes_asked_with_the_labelled_rows_first(shared_data: Path):
    small = dump_data.build(shared_data, 4_000)
    big = dump_data.build(shared_data, 45_000)  # past the 39,8xx public texts: variations
    for rows, size in ((small, 4_000), (big, 45_000)):
        assert len(rows) == size and len({r.text for r in rows}) == size  # one row per text
        train = [r for r in rows if r.split == "train"]
        test = [r for r in rows if r.split == "test"]
        assert len(train) == 770 and len({r.label for r in train}) == 77
        assert len(test) == 3_078 and all(r.label for r in test)  # BANKING77's test split
        assert rows[: len(train) + len(test)] == [*train, *test]
        logs = rows[len(train) + len(test) :]
        assert all(r.split == "unlabelled" and not r.label for r in logs)
    assert not any(r.base for r in small)
    made = [r for r in big if r.base]
    public = {r.text for r in big if not r.base}
    assert made and all(r.base in public and r.text != r.base for r in made)
    assert {r.origin.split("+")[0] for r in big} >= {"banking77", "clinc150", "nlupp-hotels"}


def test_the_same_size_and_seed_give_the_same_rows_and_files_an_import_takes(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    rows = dump_data.build(shared_data, 45_000)
    assert dump_data.digest(rows) == dump_data.digest(dump_data.build(shared_data, 45_000))
    assert dump_data.digest(rows) != dump_data.digest(dump_data.build(shared_data, 45_000, seed=1))
    monkeypatch.setattr(dump_data, "PART_ROWS", 20_000)
    parts = dump_data.write_parts(rows, tmp_path, "dump")
    assert [p.name for p in parts] == ["dump-0.csv", "dump-1.csv", "dump-2.csv"]
    back = []
    for part in parts:
        with part.open(encoding="utf-8", newline="") as fh:
            back += [(r["text"], r["label"], r["split"]) for r in csv.DictReader(fh)]
    assert back == [(r.text, r.label, r.split) for r in rows]
    with pytest.raises(ValueError, match="holds the 3848 labelled rows at least"):
        dump_data.build(shared_data, 1_000)
