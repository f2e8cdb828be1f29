"""The one rule for an intent name a person typed that the project does not have (REST's since
issue 43, every screen's since issue 65): it is refused, naming the project's nearest names,
unless creating it was asked for explicitly (REST's ``create``, the Data tab's Create, an
import's *create intents*). A typo never becomes an intent of one example.

Nearness is :mod:`difflib`'s ratio between name keys (:func:`storage.names.name_key`: case,
width and separators do not count), so ``REQUEST-refund`` is ``request_refund`` itself.

Example:
    >>> names = ["card_arrival", "card_linking", "Refund_not_showing_up", "request_refund"]
    >>> nearest("card_arival", names), nearest("refund", names)
    (['card_arrival', 'card_linking'], ['request_refund'])
    >>> str(unknown_intent("card_arival", names))
    "Unknown intent 'card_arival'. Did you mean 'card_arrival' or 'card_linking'? Nothing was changed; to make it a new intent, create it first."
    >>> str(unknown_intent("zz", names))  # none is near: none is named (issue 75 item 3)
    "Unknown intent 'zz'. No intent's name is close to it. Nothing was changed; to make it a new intent, create it first."
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.errors import UnknownIntentError
from storage.names import OUT_OF_SCOPE, NameIndex, name_key
from storage.tables import Intent

SHOWN = 3
CLOSE = 0.5  # difflib's ratio from which a name is "close" (REST's cut-off since issue 43)
# What every door says after the names: where a typed name only ever picks an intent (the Label
# tab's filter), the door says its own (``after``).
AFTER = " Nothing was changed; to make it a new intent, create it first."


def nearest(name: str, names: Iterable[str], n: int = SHOWN, cutoff: float = CLOSE) -> list[str]:
    """The ``n`` stored ``names`` nearest ``name``, nearest first (ties: in name order), among
    those at least ``cutoff`` near; the reserved label is never offered."""
    by_key: dict[str, str] = {}
    for stored in sorted(names):
        if stored != OUT_OF_SCOPE:
            by_key.setdefault(name_key(stored), stored)
    close = difflib.get_close_matches(name_key(name), list(by_key), n=n, cutoff=cutoff)
    return [by_key[k] for k in close]


def _listed(names: list[str], last: str) -> str:
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} {last} {quoted[-1]}"


def unknown_intent(name: str, names: Iterable[str], after: str = AFTER) -> UnknownIntentError:
    """The refusal of ``name``, which none of the project's ``names`` is: its nearest names when
    some are near (:data:`CLOSE`), then ``after``."""
    stored = [n for n in names if n != OUT_OF_SCOPE]
    close = nearest(name, stored)
    if close:
        hint = f" Did you mean {_listed(close, 'or')}?"
    elif stored:  # the least far of names that are not near would only mislead
        hint = " No intent's name is close to it."
    else:
        hint = " The project has no intent yet."
    return UnknownIntentError(name, hint + after)


def check_known(s: Session, project_id: int, names: Iterable[str]) -> None:
    """Refuse the first of ``names`` that names no intent of the project (a name written another
    way, ``Greet`` for ``greet``, names it; so does any alias of the reserved label).

    Raises:
        UnknownIntentError: naming the nearest (:func:`unknown_intent`).
    """
    stored = list(s.scalars(select(Intent.name).where(Intent.project_id == project_id)))
    index = NameIndex(stored)
    for name in names:
        if index.find(name) is None:
            raise unknown_intent(unicodedata.normalize("NFC", name).strip(), stored)
