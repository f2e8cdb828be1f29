"""What every subcommand shares: the user-error type and the app context of a data directory."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO, TypeVar

from app.access.actions import Action, checked, need

if TYPE_CHECKING:
    from app.access import ProjectHandle
    from app.serving.state import ServingState

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860


class CliError(Exception):
    """A user error: printed as one message, exit status 2."""


def whole(what: str, low: int = 1, high: int | None = None) -> Callable[[str], int]:
    """An argument type: a whole number from ``low`` to ``high`` (None: the largest id,
    :data:`storage.ids.MAX_ID`; :func:`storage.ids.whole_number`, the check every door makes),
    else argparse's usage error saying what it is (exit status 2, before the command opens
    anything). ``int`` took 2**64 for an utterance's id, and the database driver raised
    OverflowError: a traceback (issue 64). Storage is imported when an argument is read, not
    when the parser is built (``--help`` loads no database code)."""

    def parse(text: str) -> int:
        from storage.ids import MAX_ID, BadId, whole_number

        try:
            return whole_number(text, what, low=low, high=MAX_ID if high is None else high)
        except BadId as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = what  # argparse names the type in some of its messages
    return parse


def version_arg(text: str) -> int | str:
    """A model version as ``bundle export --version`` takes it: its number (``3`` or ``v3``) or
    ``base``."""
    if text.strip() == "base":
        return "base"
    return whole("version number")(text.strip().removeprefix("v"))


class VisibleText(io.TextIOBase):
    """A text stream that writes every control character it is given as ``\\uXXXX``
    (:func:`storage.texts.escape_controls`; line feeds and tabs stay), whatever the stream is: a
    terminal, a pipe, a file. A project name, a text or a user name the command prints can never
    move the cursor, clear the screen, rewrite a line or reorder what a terminal shows, be it
    this one (issue 56, row 9) or the one ``intent-studio predict … | cat`` or ``less`` writes to
    later (issue 64: a pipe got raw ESC, CR and BEL). JSON lines stay exact: inside a JSON
    string ``\\uXXXX`` is the character itself, and outside one JSON has none. A format that
    has no escapes (CSV) writes to :func:`data_output`."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        shown = text
        # every character escape_controls escapes is one Python does not call printable: a text
        # without any (--help's) is written as it is, without loading the storage package
        if not text.replace("\n", "").replace("\t", "").isprintable():
            from storage.texts import escape_controls

            shown = escape_controls(text)
        self.stream.write(shown)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:  # a child process writes to the stream itself
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8")


def data_output() -> TextIO:
    """The standard output a command writes data to exactly, character for character (CSV, whose
    quoting keeps a CR or an ESC as it is: ``predict --format csv > out.csv``); every other line
    goes through :class:`VisibleText`."""
    out = sys.stdout
    return out.stream if isinstance(out, VisibleText) else out


@contextmanager
def visible_output() -> Iterator[None]:
    """Standard output and error as :class:`VisibleText` while a command runs."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = VisibleText(out), VisibleText(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


# The contexts a command opened: :func:`close_contexts` closes them when it returns, so its
# background threads (a multi-label head's fit, a calibration) stop before the interpreter does
# (torch cut off on another thread at exit aborts the process: exit 134, issue 45 row 6).
_opened: list[ServingState] = []


def context(args: argparse.Namespace) -> ServingState:
    from app.config import load_settings
    from app.serving.state import ServingState

    serving_state = ServingState.open(load_settings(args.data_dir, args.db_url))
    _opened.append(serving_state)
    return serving_state


def close_contexts() -> None:
    """Close every context a command opened (its background work stopped and waited for)."""
    while _opened:
        _opened.pop().close()


def leave_process() -> None:
    """What ``intent-studio`` does last as a process, once its command returned and its contexts
    are closed: wait for the native calls other threads still have under way and hold any new one
    in plain Python (:mod:`core.encoding.exit_gate`: a thread ended inside torch aborts the
    process, exit 134), then move every object out of the interpreter's last garbage collections
    (``gc.freeze``): finalising walked the whole heap of models and caches for 10-33 s after a
    stopped worker had joined its threads, on a loaded 2-core machine (issue 57)."""
    import gc

    from core.encoding.exit_gate import NATIVE

    NATIVE.close()
    gc.freeze()


def project(serving_state: ServingState, name: str | None, action: Action) -> ProjectHandle:
    """The project ``name`` as the command line uses it for ``action`` (an action of the
    permissions table, :mod:`app.access.actions`): the operator on the server acts as the local
    admin (:func:`app.access.open_project`)."""
    from app.access import open_project
    from app.access.auth import LOCAL

    role = need(action)  # anything but an action of the table is refused before the database
    if not name:
        raise CliError("Give the project: --project NAME.")
    return open_project(serving_state.db, name, LOCAL, need=role)


Command = TypeVar("Command", bound=Callable[[argparse.Namespace], int])


def acts(action: Action) -> Callable[[Command], Command]:
    """Declare the action a command performs, of the permissions table (each command names one:
    the most it may change; a project it opens for less says so, :func:`project`). The command
    line asks the table before the command runs (:func:`ask_table`); anything but an action of
    the table is refused here, at import."""
    found = checked(action)

    def mark(fn: Command) -> Command:
        fn.action = found  # type: ignore[attr-defined]
        return fn

    return mark


def ask_table(command: Callable[..., int]) -> None:
    """Refuse ``command`` unless the one who runs it (the server's operator, the local admin)
    may do the action it declares (:func:`acts`). A command that declares none is a bug."""
    from app.access.auth import LOCAL, acting_as, require_acting

    found = checked(getattr(command, "action", None))
    with acting_as(LOCAL):
        require_acting(found.role, found.says)
