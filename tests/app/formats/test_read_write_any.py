"""One place picks the format: read_any and write_any dispatch on the suffix, for every format."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.formats import FormatError, read_any, write_any
from tests.app.formats.rows import LABELLED, ROWS, key

# Rasa and intent files hold labelled rows only; CSV and JSONL hold every row.
FORMATS = [(".csv", ROWS), (".jsonl", ROWS), (".yml", LABELLED), (".yaml", LABELLED)]
FORMATS += [(".zip", LABELLED), ("", LABELLED)]


@pytest.mark.parametrize(("suffix", "expected"), FORMATS)
def test_what_write_any_writes_read_any_reads_back(tmp_path, suffix, expected):
    path = tmp_path / f"out{suffix}"
    write_any(ROWS, path)
    assert key(read_any(path).rows) == key(expected)
    assert not list(tmp_path.glob("*.tmp"))  # written to a temporary name, then renamed


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".yml", ".zip"])
def test_bytes_are_read_by_the_suffix_given(tmp_path, suffix):
    path = tmp_path / f"out{suffix}"
    write_any(LABELLED, path)
    assert key(read_any(path.read_bytes(), suffix=suffix).rows) == key(LABELLED)


def test_an_unknown_suffix_is_refused():
    with pytest.raises(FormatError, match="Unsupported"):
        read_any(Path("x.xlsx"))
    with pytest.raises(FormatError, match=r"Unsupported file type '\.xlsx'"):
        read_any(b"whatever", suffix=".xlsx")


def test_an_unknown_suffix_is_written_as_csv(tmp_path):
    write_any(LABELLED, tmp_path / "out.data")
    assert (tmp_path / "out.data").read_text().startswith("text,labels,split\n")


def test_a_file_over_25_mb_is_refused_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.yml"
    with big.open("wb") as fh:
        fh.truncate(26 * 1024 * 1024)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("the file was read"))
    with pytest.raises(FormatError, match="limit is 25 MB"):
        read_any(big)
