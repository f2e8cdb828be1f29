"""Intent names and texts that look alike, hide characters or break a database (issue 27, rows 7
and 8): every rule is :mod:`storage.texts`, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from storage.errors import StorageError
from storage.imports import import_rows
from storage.projects import create_intent, describe_intents, list_intents, rename_intent
from storage.tables import Intent, Utterance
from storage.utterances import NewUtterance, add_utterance, set_labels

NFC, NFD = "caf\u00e9", "cafe\u0301"


def _counts(db, project_id: int) -> tuple[int, int]:
    with db.session() as s:
        n_intents = s.scalar(select(func.count()).where(Intent.project_id == project_id))
        n_utts = s.scalar(select(func.count()).where(Utterance.project_id == project_id))
    return n_intents, n_utts


def test_a_nul_in_an_intent_name_is_refused_with_a_message_on_both_databases(db, project):
    before = _counts(db, project)
    for attempt in (
        lambda s: create_intent(s, project, "gre\x00et"),
        lambda s: import_rows(s, project, [NewUtterance("hi there", ("gre\x00et",))]),
        lambda s: add_utterance(s, project, "hi there", ["gre\x00et"]),
        lambda s: describe_intents(s, project, {"gre\x00et": "says hello"}),
        lambda s: rename_intent(s, project, "refund", "ref\x00und"),
    ):
        with pytest.raises(StorageError, match="NUL"), db.session() as s:
            attempt(s)
    assert _counts(db, project) == before


def test_nfc_and_nfd_spellings_are_one_name_and_one_text(db, project):
    with db.session() as s:
        create_intent(s, project, NFC)
    with pytest.raises(StorageError, match="already exists"), db.session() as s:
        create_intent(s, project, NFD)
    with db.session() as s:
        add_utterance(s, project, f"un {NFC} s'il vous plait", [NFD])
    with pytest.raises(StorageError), db.session() as s:
        add_utterance(s, project, f"un {NFD} s'il vous plait", [NFC])
    with db.session() as s:
        import_rows(s, project, [NewUtterance(f"deux {NFD}", (NFD,))])
        names = [i.name for i in list_intents(s, project)]
        texts = set(s.scalars(select(Utterance.text).where(Utterance.project_id == project)))
    assert names.count(NFC) == 1 and NFD not in names
    assert f"deux {NFC}" in texts and f"deux {NFD}" not in texts


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("greet\u200b", "U+200B ZERO WIDTH SPACE"),
        ("gr\u200deet", "U+200D ZERO WIDTH JOINER"),
        ("\u202egreet", "bidi-control character (U+202E RIGHT-TO-LEFT OVERRIDE)"),
        ("greet\u2066x\u2069", "bidi-control"),
        ("greet\x07", "control character (U+0007"),
        ("gre\ufeffet", "U+FEFF"),
    ],
)
def test_invisible_bidi_and_control_characters_are_refused_in_names(db, project, name, says):
    before = _counts(db, project)
    with pytest.raises(StorageError, match=r"cannot contain") as err, db.session() as s:
        create_intent(s, project, name)
    assert says in str(err.value)
    with pytest.raises(StorageError, match="cannot contain"), db.session() as s:
        import_rows(s, project, [NewUtterance("hello you", (name,))])
    assert _counts(db, project) == before


def test_a_name_confusable_with_an_existing_intent_is_refused_naming_it(db, project):
    with db.session() as s:
        create_intent(s, project, "greet")
    before = _counts(db, project)
    cyrillic = "gr\u0435et"  # CYRILLIC SMALL LETTER IE
    for attempt in (
        lambda s: create_intent(s, project, cyrillic),
        lambda s: rename_intent(s, project, "refund", cyrillic),
        lambda s: rename_intent(s, project, "refund", "cance1_order"),  # digit one for l
    ):
        with pytest.raises(StorageError, match="looks like the existing intent"), db.session() as s:
            attempt(s)
    with pytest.raises(StorageError, match="Use 'greet'"), db.session() as s:
        create_intent(s, project, cyrillic)
    assert _counts(db, project) == before
    with db.session() as s:  # a name that only shares letters is fine; an existing one is reused
        create_intent(s, project, "greeting")
        set_labels(s, project, 1, ["greet"])


@pytest.mark.parametrize(
    "name, says",
    [
        ("shop\x1b[2J", "U+001B ESCAPE"),
        ("shop\rroot", "U+000D"),
        ("shop\nsecond line", "U+000A"),
        ("\u202eshop", "bidi-control character (U+202E"),
        ("\u3164", "needs something visible"),
        ("   ", "needs a name"),
    ],
)
def test_project_names_have_the_character_rules_of_intent_names(db, project, name, says):
    """Issue 56, rows 3 and 9: a project's name kept ESC, CR and LF (the CLI printed them raw)
    and had no character rules at all."""
    from storage.projects import create_project, list_projects

    with db.session() as s:
        before = [p.name for p in list_projects(s)]
    with pytest.raises(StorageError, match=rf"project .*{re.escape(says)}"), db.session() as s:
        create_project(s, name)
    with db.session() as s:
        assert [p.name for p in list_projects(s)] == before


def test_a_text_with_a_bidi_override_is_refused_and_one_with_marks_is_kept(db, project):
    """Issue 56, row 9: right-to-left overrides made reviewers read a text other than the one
    the model sees (``\\u202e`` shows ``pay 100 to`` ... reversed). Overrides, embeddings and
    isolates are refused, saying where; the marks right-to-left scripts need stay."""
    before = _counts(db, project)
    for text in ("send \u202e001 yap\u202c now", "send \u2067x\u2069", "send \u202ax"):
        with pytest.raises(StorageError, match="bidi control"), db.session() as s:
            add_utterance(s, project, text, ["refund"])
    assert _counts(db, project) == before
    with db.session() as s:
        add_utterance(s, project, "\u05e9\u05dc\u05d5\u05dd\u200f!", ["greet"])  # Hebrew + RLM


def test_the_security_log_keeps_every_field_on_one_line_without_control_characters(db):
    """Issue 56, row 9: the security log stored a name typed at the sign-in form raw: a
    newline forged a line of its own, an ANSI sequence recoloured an admin's terminal."""
    from storage.users import record_event, security_events

    with db.session() as s:
        record_event(s, "sign_in_failed", "admin\n2025 signed_in root\x1b[31m", address="10.0.0.1")
    with db.session() as s:
        event = security_events(s, 1)[0]
    assert event.user_name == "admin\\u000a2025 signed_in root\\u001b[31m"
