"""Issue 64, item 1, at the command line: every whole number a command takes (an utterance's id,
a version, a limit, ``-k``, a port: every argument the parser reads as a number, enumerated
from the parser, not listed here) refuses 2**63, 2**64, -1, 1.5, "1e3" and an empty string
(an id: 0 too) with a usage error that says what it takes: exit status 2, no traceback, before
the command opens anything. Before, ``delete 18446744073709551616`` raised OverflowError in
the database driver: a traceback."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import pytest

from app.cli import build_parser, main

pytestmark = pytest.mark.fast

HOSTILE: list[Any] = [2**63, 2**64, -1, 1.5, "1e3", ""]
IDS = {"id", "version"}  # a row's id: 0 is none either


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))
    if path:
        yield path, parser


def _numbers(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a command reads as a number (not text, not a choice, not a flag)."""
    return [
        a
        for a in parser._actions
        if a.type is not None and a.type not in (str, float) and not a.choices and a.nargs != 0
    ]


def _argv(parser: argparse.ArgumentParser, target: argparse.Action, value: str) -> list[str]:
    """The command's required arguments filled in, and ``value`` for ``target``."""
    argv: list[str] = []
    for a in parser._actions:
        if a is target or isinstance(a, argparse._HelpAction):
            continue
        filler = str(a.choices[0] if a.choices else "x") if a.choices else "x"
        if a.option_strings and a.required:
            argv += [a.option_strings[0], filler]
        elif not a.option_strings and a.nargs not in ("?", "*"):
            argv.append(filler)
    flag = target.option_strings[-1] if target.option_strings else None
    # "--limit=-1": a negative value joined to its option, so argparse reads it as a value
    return [*argv, f"{flag}={value}"] if flag else [*argv, "--", value]


def _cases() -> Iterator[Any]:
    for path, parser in _commands(build_parser()):
        for target in _numbers(parser):
            name = target.option_strings[-1] if target.option_strings else target.dest
            values = [*HOSTILE, 0] if target.dest in IDS else HOSTILE
            for bad in values:
                yield pytest.param(
                    path, parser, target, str(bad), id=f"{' '.join(path)} {name}={bad}"
                )


CASES = list(_cases())


def test_the_parser_has_the_numbers_it_should():
    tried = {(c.values[0], c.values[2].dest) for c in CASES}
    assert {(("delete",), "id"), (("bundle", "export"), "version"), (("predict",), "k")} <= tried
    assert len({c.values[0] for c in CASES}) >= 7  # delete, activity, predict, clusters, ...


@pytest.mark.parametrize(("path", "parser", "target", "bad"), CASES)
def test_every_number_a_command_takes_refuses_what_is_none_with_a_usage_error(
    path, parser, target, bad, tmp_path, capsys
):
    argv = ["--data-dir", str(tmp_path / "data"), *path, *_argv(parser, target, bad)]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2, (argv, err)
    assert "Traceback" not in err
    assert "is a whole number from" in err or "is none" in err, err  # says what it takes
    assert not (tmp_path / "data").exists()  # refused before the command opened anything
