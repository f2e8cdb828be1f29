"""Small helpers shared by the tab builders: turning service errors into messages."""

from __future__ import annotations

import html
import inspect
import logging
import re
import threading
import typing
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from app.services.training.retrain_jobs import QueueUnavailable
from app.serving.admission import BusyError
from storage.db import Database
from storage.errors import ArtifactsUnavailable, DatabaseUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
R = TypeVar("R")
P = ParamSpec("P")

# Errors that are the user's to fix (or to retry, when busy or the queue is down). Anything else
# (AttributeError, TypeError, KeyError, NameError...) is a bug: it is never turned into a message
# here but goes on to the UI's front door, which logs it with its traceback and shows it as an
# error (app/ui/guard.py, ``unexpected``). No service raises a KeyError for the user: "not
# found" is storage's NotFoundError, a ValueError.
USER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    PermissionError,
    BusyError,
    QueueUnavailable,
    DatabaseUnavailable,
    ArtifactsUnavailable,
)

# An upload is used once (app.perimeter.uploads): a File box may still show one that is gone.
GONE = (
    "The file is no longer on the server (an upload is removed when its import ends, or after "
    "an hour unused): upload it again."
)


# Seconds a toast stays: every one closes by itself (the status line beside the action keeps
# the message), so refusals never pile up over the page.
TOAST_SECONDS = 4
WARNING_SECONDS = 8


# The events that showed a toast already (the newest kept): one toast per action at most.
_TOASTED: OrderedDict[str, None] = OrderedDict()
_TOASTED_KEPT = 1000
_toasted_lock = threading.Lock()


def toast(message: str, *, error: bool = False) -> None:
    """Show ``message`` as a notification in the corner (Gradio's ``gr.Info`` / ``gr.Warning``)
    while an event runs; it closes by itself. One per event: a second message of the same
    action is said where the action was, never as a second toast. Outside an event (the API,
    tests) the returned status line is the whole answer, so nothing is shown."""
    import gradio as gr
    from gradio.context import LocalContext

    event = LocalContext.event_id.get(None)
    if event is None:
        return
    with _toasted_lock:
        if event in _TOASTED:
            return
        _TOASTED[event] = None
        while len(_TOASTED) > _TOASTED_KEPT:
            _TOASTED.popitem(last=False)
    text = html.escape(message)  # toasts render HTML; messages quote user text
    if error:
        gr.Warning(text, duration=WARNING_SECONDS, title="Not done")
    else:
        gr.Info(text, duration=TOAST_SECONDS, title="Done")


# What starts Markdown inline: emphasis (``*``; ``_`` at a word's edge: inside a word, as in
# ``track_order``, it is a letter), code, links and images (``[``), HTML tags and autolinks (``<``),
# entities (``&``), strike-through (``~``), LaTeX (``$``), and the bare autolinks GFM makes of
# ``https://``, ``www.`` and ``a@b``. CommonMark makes a backslash-escaped one literal. (Headings,
# lists and quotes start a line: the text is never split into lines.)
_MARKDOWN = re.compile(
    r"[\\`*\[\]<>~$&@]|(?<![^\W_])_|_(?![^\W_])|(?<=[A-Za-z]):(?=//)|(?<=www)\.", re.IGNORECASE
)


def md_text(value: object) -> str:
    r"""``value`` as plain text inside Markdown (issue 56, row 3), on one line: what would start
    Markdown or HTML is backslash-escaped, so a name or a text written as Markdown or HTML shows
    as the characters it is: ``[Sign in](https://evil)``, ``<img src=x>``, ``*x*`` stay as typed.

    Example:
        >>> md_text("[Sign in](https://evil.example) <b>x</b> www.evil.example")
        '\\[Sign in\\](https\\://evil.example) \\<b\\>x\\</b\\> www\\.evil.example'
        >>> md_text("track_order _it_ (2): done")
        'track_order \\_it\\_ (2): done'
    """
    return _MARKDOWN.sub(lambda m: "\\" + m.group(0), " ".join(str(value).splitlines()))


def md_sentence(sentence: str) -> str:
    r"""An explanation's sentence (names marked ``*name*``:
    :func:`core.retrieval.explain.sentence_parts`) as Markdown: the names bold, all of it plain
    text.

    Example:
        >>> md_sentence("Predicted *card_arrival* like '{{7\\*7}}'.")
        "Predicted **card_arrival** like '{{7\\*7}}'."
    """
    from core.retrieval.explain import sentence_parts

    return "".join(f"**{md_text(t)}**" if on else md_text(t) for t, on in sentence_parts(sentence))


# Plain symbols (✓ ⚠) rather than emoji: they render with the fonts every machine has.
def breakable(name: str) -> str:
    """An intent's name as a Markdown table cell shows it: it breaks only after an underscore
    (a ``<wbr>``), never mid-word ("Refund_not_showing_u / p": issue 65, item 7); every other
    character that is not a letter, a digit or a space is a numeric character reference, so
    nothing in a name is Markdown or HTML. :func:`unbroken` reads the name back.

    Example:
        >>> breakable("Refund_not_showing_up")
        'Refund&#95;<wbr>not&#95;<wbr>showing&#95;<wbr>up'
        >>> breakable("<b>*x*</b>")
        '&#60;b&#62;&#42;x&#42;&#60;&#47;b&#62;'
    """
    return "".join(
        "&#95;<wbr>" if c == "_" else c if c.isalnum() or c == " " else f"&#{ord(c)};" for c in name
    )


def unbroken(cell: str) -> str:
    """The name a :func:`breakable` cell shows.

    Example:
        >>> unbroken(breakable("a_b <c>")), unbroken("plain")
        ('a_b <c>', 'plain')
    """
    return html.unescape(cell.replace("<wbr>", ""))


def ok(message: str, *, notify: bool = False) -> str:
    """A success line for the status beside the button. No toast unless ``notify``: a "Done"
    toast in the corner repeated the line beside the button, word for word (issue 65, item 7);
    a refusal still gets one (:func:`problem`). The message is plain text: names and texts it
    quotes show as typed (:func:`md_text`)."""
    if notify:
        toast(message)
    return f"✓ {md_text(message)}"


# What Markdown could still read as markup once the text is HTML-escaped (emphasis, code, links,
# images, tables, maths, autolinks: "http://", "www.", an e-mail's "@"), written as a character
# reference instead (CommonMark never reads one as markup): the text shows as typed, in the
# Markdown of a status line and in the HTML of a preview alike. A line of a message is never a
# Markdown line (they are joined with <br> inside one span), so no list or heading can start.
_INERT = re.compile(r"[&<>\"'`*_\[\]\\~$|#@]|:(?=//)|(?<=www)\.", re.IGNORECASE)


def _reference(char: str) -> str:
    """``char`` as HTML writes it (``&lt;``, ``&#x27;``) or as a numeric character reference."""
    escaped = html.escape(char)
    return escaped if escaped != char else f"&#{ord(char)};"


def inert(text: str) -> str:
    r"""``text`` as plain text in Markdown or HTML, on one line per line of it (``<br>``).

    Example:
        >>> inert("Unknown intent '<b>*x*</b>' (see [docs](http://x)).")
        'Unknown intent &#x27;&lt;b&gt;&#42;x&#42;&lt;/b&gt;&#x27; (see &#91;docs&#93;(http&#58;//x)).'
        >>> inert("line 1: bad\nline 2: worse")
        'line 1: bad<br>line 2: worse'
    """
    lines = [_INERT.sub(lambda m: _reference(m.group(0)), line) for line in text.splitlines()]
    return "<br>".join(lines)


def problem(message: str, *, notify: bool = True) -> str:
    """A refusal for the status beside the button: one sentence in the app's words after a ⚠,
    the text as typed (no code block: issue 75 item 3), and a toast (unless ``notify=False``:
    the labelling queue says every refusal in its own status line, where a key's refusal
    belongs; toasts a key each would pile up over the card). At most one toast per action
    (:func:`toast`).

    Example:
        >>> problem("Unknown intent 'zz'.", notify=False)
        "⚠ <span class='problem'>Unknown intent &#x27;zz&#x27;.</span>"
    """
    if notify:
        toast(message, error=True)
    return f"⚠ <span class='problem'>{inert(message)}</span>"


def attempt(fn: Callable[[], T]) -> tuple[T | None, str | None]:
    """Run ``fn``; return (result, None), or (None, message) for an error that is the user's to
    fix (:data:`USER_ERRORS`). The caller shows the message: an empty list in its place would
    hide why the page shows nothing. Any other exception is a bug and is raised as it is, so the
    UI's front door logs it with its traceback and shows it (never an empty list).

    Example:
        >>> attempt(lambda: int("12"))
        (12, None)
        >>> attempt(lambda: int("twelve"))
        (None, "invalid literal for int() with base 10: 'twelve'")
        >>> attempt(lambda: "project".id)
        Traceback (most recent call last):
        AttributeError: 'str' object has no attribute 'id'
    """
    try:
        return fn(), None
    except USER_ERRORS as exc:
        return None, str(exc)


@typing.overload
def bind(fn: Callable[Concatenate[A, P], R], a: A, /) -> Callable[P, R]: ...
@typing.overload
def bind(fn: Callable[Concatenate[A, B, P], R], a: A, b: B, /) -> Callable[P, R]: ...
def bind(fn: Callable[..., Any], *bound: Any) -> Callable[..., Any]:
    """``fn`` with its leading arguments fixed (usually the app context), as Gradio should see it.

    Unlike :func:`functools.partial`, the result keeps ``fn``'s name (Gradio derives an event's
    API name from it) and the remaining parameters with their resolved type hints (Gradio fills a
    ``gr.SelectData`` or ``gr.Request`` parameter by its annotation).

    Example:
        >>> def greet(greeting: str, name: str) -> str:
        ...     return f"{greeting}, {name}"
        >>> hello = bind(greet, "Hello")
        >>> hello.__name__, hello("Ada"), list(inspect.signature(hello).parameters)
        ('greet', 'Hello, Ada', ['name'])
    """

    def run(*args: Any) -> Any:
        return fn(*bound, *args)

    hints = typing.get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())[len(bound) :]
    params = [p.replace(annotation=hints.get(p.name, p.empty)) for p in params]
    run.__name__, run.__qualname__, run.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    run.__module__ = fn.__module__
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: hints[p.name] for p in params if p.name in hints}
    return run


def project_picker(db: Database, picked: str | None, *, select: bool = True) -> Any:
    """The project picker's update: fresh choices and ``picked`` as the value (``select=False``:
    left as it is when it exists, so a late answer never switches back a project picked
    meanwhile; else the first project). The choices always come with a new value: a Dropdown
    whose value is not among its choices fails every event that reads it ("Value: x is not in
    the list of choices")."""
    import gradio as gr

    from app.services.projects import projects as project_svc

    fresh = project_svc.project_names(db)
    if picked in fresh:
        return gr.update(choices=fresh, value=picked) if select else gr.update(choices=fresh)
    return gr.update(choices=fresh, value=next(iter(fresh), None))


CONFIRM_TEST = "I'm changing a test label"


def confirm_test_box(elem_id: str, **layout: Any) -> Any:
    """The tick a change to a test row needs (the test split reports the accuracy:
    :func:`app.services.labelling.data.refuse_unconfirmed_test_change`), unticked; ``layout``:
    where it sits (``scale``, ``min_width``, ``visible``)."""
    import gradio as gr

    return gr.Checkbox(label=CONFIRM_TEST, value=False, elem_id=elem_id, **layout)
