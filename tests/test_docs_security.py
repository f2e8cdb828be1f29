"""The Security table of docs/operations.md says what the code does: every value it names is the value of the
constant it points to, and every limit in ``app/limits/__init__.py`` is in the table (issue 27)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import app.limits

PAGE = Path(__file__).resolve().parents[1] / "docs" / "operations.md"


def security_rows() -> list[tuple[str, str, str]]:
    """(limit, value, in the code) for each row of the Security section's table."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("\n## Security\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) == 3 and cells[0] not in ("limit", "---"):
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def constant(path: str, name: str) -> int:
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    value: object = module
    for part in name.split("."):
        value = getattr(value, part)
    assert isinstance(value, int), f"{name} in {path} is not a number"
    return value


def test_every_value_in_the_security_table_is_the_codes():
    rows = security_rows()
    assert len(rows) >= 10
    for limit, value, where in rows:
        names = re.findall(r"`([^`]+)`", where)
        path, constants = names[-1], names[:-1]
        assert path.endswith(".py") and constants, f"row {limit!r}: name a constant and its file"
        for name in constants:
            number = constant(path, name)
            assert f"{number:,}" in value, f"row {limit!r}: {name} is {number:,}, not in {value!r}"


def test_every_limit_in_app_limits_is_in_the_security_table():
    listed = {name for _, _, where in security_rows() for name in re.findall(r"`(\w+)`", where)}
    defined = {name for name in vars(app.limits) if name.isupper()}
    assert defined <= listed, (
        f"not in the Security table of docs/operations.md: {sorted(defined - listed)}"
    )
