"""One name per intent (issue 43, hole 4): ``Greet`` beside ``greet``, full-width ``ｇｒｅｅｔ``,
``greet`` + a variation selector, a name of only Hangul fillers, a braille blank or combining
marks, and look-alikes of the reserved ``out_of_scope`` were accepted as separate intents through
every write path. A new name that is an intent written another way is refused naming it, a name
with nothing visible is refused, and wherever a name is given for an existing intent (labels,
imports, descriptions, team answers, renames, merges) it means that intent."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from storage.errors import StorageError
from storage.imports import import_rows, plan_import
from storage.names import NameIndex, name_key
from storage.projects import (
    create_intent,
    delete_intent,
    describe_intent,
    describe_intents,
    list_intents,
    merge_intents,
    rename_intent,
)
from storage.tables import Intent
from storage.team import answers, save_answer
from storage.users import create_user
from storage.utterances import NewUtterance, add_utterance, list_utterances, set_labels

VARIANTS = {
    "capital": "Greet",
    "upper": "GREET",
    "full-width": "\uff47\uff52\uff45\uff45\uff54",
    "variation selector": "greet\ufe00",
    "zero-width space": "gr\u200beet",
    "Cyrillic e": "gr\u0435et",
    "trailing braille blank": "greet\u2800",
    # issue 56, row 8: letters whose look-alike prototype is a capital, and small capitals
    "Cherokee": "\u13c0\u13a1\u13ac\u13ac\u13a2",
    "Latin small capitals": "\u0262\u0280\u1d07\u1d07\u1d1b",
}
RESERVED = {
    "hyphens": "out-of-scope",
    "upper": "OUT_OF_SCOPE",
    "Greek omicron": "out_\u03bff_scope",
    "words": "Out Of Scope",
    "full-width": "\uff4f\uff55\uff54\uff3f\uff4f\uff46\uff3f\uff53\uff43\uff4f\uff50\uff45",
}
BLANK = {
    "Hangul filler": "\u3164",
    "Hangul choseong filler": "\u115f",
    "Hangul jungseong filler": "\u1160",
    "halfwidth Hangul filler": "\uffa0",
    "braille blank": "\u2800",
    "combining marks": "\u0301\u0308",
    "variation selector": "\ufe00",
    "fillers and a mark": "\u3164\u0301\u3164",
}


def _names(db, project: int) -> list[str]:
    with db.session() as s:
        return [i.name for i in list_intents(s, project)]


@pytest.fixture
def greet(db, project):
    """The shop project with an intent ``greet`` (one example)."""
    with db.session() as s:
        add_utterance(s, project, "hello you", ["greet"])
    return project


# Each test goes through every variant in one project (the variants are not parametrized: each
# case would set up a database twice, for SQLite and PostgreSQL).


def test_a_new_intent_written_like_an_existing_one_is_refused_naming_it(db, greet):
    before = _names(db, greet)
    for name in VARIANTS.values():
        assert name_key(name) == name_key("greet"), name
        for attempt in (
            lambda s: create_intent(s, greet, name),  # noqa: B023 (called at once)
            lambda s: rename_intent(s, greet, "refund", name),  # noqa: B023
        ):
            with (
                pytest.raises(StorageError, match="looks like the existing intent 'greet'") as err,
                db.session() as s,
            ):
                attempt(s)
            assert "Use 'greet'" in str(err.value)
    assert _names(db, greet) == before


def test_a_look_alike_of_the_reserved_label_is_refused_as_a_new_intent(db, project):
    for name in RESERVED.values():
        with (
            pytest.raises(StorageError, match="looks like the reserved label 'out_of_scope'") as e,
            db.session() as s,
        ):
            create_intent(s, project, name)
        assert "Use 'out_of_scope' for examples that belong to no intent" in str(e.value)
        with pytest.raises(StorageError, match="reserved label"), db.session() as s:
            rename_intent(s, project, "refund", name)
    assert "out_of_scope" not in _names(db, project)


def test_a_name_with_nothing_visible_is_refused_on_every_path(db, project):
    before = _names(db, project)
    for name in BLANK.values():
        for attempt in (
            lambda s: create_intent(s, project, name),  # noqa: B023 (called at once)
            lambda s: rename_intent(s, project, "refund", name),  # noqa: B023
            lambda s: add_utterance(s, project, "hi you", [name]),  # noqa: B023
            lambda s: set_labels(s, project, 1, [name]),  # noqa: B023
            lambda s: import_rows(s, project, [NewUtterance("hi you", (name,))]),  # noqa: B023
            lambda s: describe_intents(s, project, {name: "says hello"}),  # noqa: B023
        ):
            with pytest.raises(StorageError, match="needs something visible"), db.session() as s:
                attempt(s)
    assert _names(db, project) == before


def test_a_label_written_another_way_names_the_existing_intent_on_every_write_path(db, greet):
    for i, name in enumerate(VARIANTS.values()):
        with db.session() as s:
            add_utterance(s, greet, f"hi there {i}", [name])  # REST label, the Data tab's add
            set_labels(s, greet, 1, [name, "greet"])  # the Label tab, REST, bulk
            new = [NewUtterance(f"hey {i}", (name,))]
            plan = plan_import(s, greet, new, described=[name])
            import_rows(s, greet, new)
            describe_intents(s, greet, {name: f"Says hello {i}"})
            describe_intent(s, greet, name, f"Says hello. {i}")
            rows = {r.text: r.labels for r in list_utterances(s, greet)}
            description = s.scalar(select(Intent.description).where(Intent.name == "greet"))
        assert plan.rows[0].labels == ("greet",) and plan.mapped == ((name, "greet"),), name
        assert rows[f"hi there {i}"] == rows[f"hey {i}"] == ("greet",), name
        assert rows["where is my parcel"] == ("greet",) and description == f"Says hello. {i}"
    assert _names(db, greet) == ["cancel_order", "greet", "refund", "track_order"]


def test_a_look_alike_of_the_reserved_label_labels_out_of_scope(db, project):
    for i, name in enumerate(RESERVED.values()):
        with db.session() as s:
            add_utterance(s, project, f"tell me a joke {i}", [name])
            plan = plan_import(s, project, [NewUtterance(f"sing a song {i}", (name,))])
            import_rows(s, project, [NewUtterance(f"sing a song {i}", (name,))])
            rows = {r.text: r.labels for r in list_utterances(s, project)}
        assert plan.mapped == ((name, "out_of_scope"),), name
        assert rows[f"tell me a joke {i}"] == rows[f"sing a song {i}"] == ("out_of_scope",)
    assert _names(db, project) == ["cancel_order", "out_of_scope", "refund", "track_order"]


def test_an_import_maps_each_way_of_writing_a_new_name_onto_the_first(db, project):
    rows = [
        NewUtterance("hi", ("Greet",)),
        NewUtterance("hello", ("greet",)),
        NewUtterance("hey", ("\uff27\uff52\uff45\uff45\uff54", "Greet")),
        NewUtterance("card", ("card-block",)),
        NewUtterance("my card", ("card block",)),
    ]
    with db.session() as s:
        plan = plan_import(s, project, rows)
        counts = import_rows(s, project, rows)
    assert dict(plan.mapped) == {
        "greet": "Greet",
        "\uff27\uff52\uff45\uff45\uff54": "Greet",
        "card block": "card-block",
    }
    assert [r.labels for r in plan.rows] == [("Greet",)] * 3 + [("card-block",)] * 2
    assert counts.intents_created == ("Greet", "card-block")
    with (  # an invisible character in a new name: refused, naming the label
        pytest.raises(StorageError, match=r"The label 'sale\\u200b' is no intent .* invisible"),
        db.session() as s,
    ):
        import_rows(s, project, [NewUtterance("on sale", ("sale\u200b",))])


def test_team_answers_that_name_one_intent_two_ways_agree(db, greet):
    with db.session() as s:
        ann = create_user(s, "ann", "designer", "x").id
        bob = create_user(s, "bob", "designer", "y").id
        cid = create_user(s, "cid", "designer", "z").id
        save_answer(s, greet, 4, ann, "label", ["Greet"])
        save_answer(s, greet, 4, bob, "label", ["\uff47\uff52\uff45\uff45\uff54", "greet"])
        save_answer(s, greet, 4, cid, "label", ["OUT-OF-SCOPE"])
        got = {a.annotator: (a.action, tuple(a.intents)) for a in answers(s, greet, [4])}
    assert got == {"ann": ("label", ("greet",)), "bob": ("label", ("greet",)), "cid": ("oos", ())}


def test_merging_and_deleting_by_another_way_of_writing_the_name(db, greet):
    with db.session() as s:
        assert merge_intents(s, greet, ["REFUND"], "Greet") == 1  # into greet, not a new intent
        assert delete_intent(s, greet, "CANCEL-ORDER") == 2
    assert _names(db, greet) == ["greet", "track_order"]


def test_an_older_project_with_two_ways_of_one_name_keeps_both_until_merged(db, project):
    with db.session() as s:  # as a project made before the rule may hold them
        s.add_all(
            [Intent(project_id=project, name="Greet"), Intent(project_id=project, name="greet")]
        )
    with db.session() as s:
        set_labels(s, project, 1, ["Greet"])  # each exact name is its own intent
        set_labels(s, project, 2, ["greet"])
        with pytest.raises(StorageError, match=r"could be 'Greet' and 'greet'.*Merge them"):
            set_labels(s, project, 3, ["GREET"])
    with db.session() as s:
        merge_intents(s, project, ["Greet"], "greet")
        set_labels(s, project, 3, ["GREET"])
        assert list_utterances(s, project, ids=[1, 3])[1].labels == ("greet",)


def test_renaming_an_intent_to_another_case_of_its_own_name_is_fine(db, greet):
    with db.session() as s:
        assert rename_intent(s, greet, "greet", "Greet").name == "Greet"
        assert rename_intent(s, greet, "GREET", "greet").name == "greet"


def test_the_key_keeps_apart_what_looks_different():
    index = NameIndex(["greet", "card_block", "café", "faq/hours"])
    for other in ("greeting", "greet2", "cardblock", "cafe", "faq_hours", "card.block"):
        assert index.find(other) is None, other


def test_the_issue_56_look_alikes_of_track_order_are_track_order():
    """Issue 56, row 8: Cherokee ``ᎢᏒᎪᏟᏦ_ᎾᏒᎠᎬᏒ`` (its ``Ꮎ`` a look-alike of ``O`` with a stroke
    through it) and Latin small capitals ``ᴛʀᴀᴄᴋ_order`` were accepted beside ``track_order``."""
    index = NameIndex(["track_order"])
    for name in (
        "\u13a2\u13d2\u13aa\u13df\u13e6_\u13be\u13d2\u13a0\u13ac\u13d2",
        "\u1d1b\u0280\u1d00\u1d04\u1d0b_order",
    ):
        assert index.find(name) == "track_order", ascii(name)
        with pytest.raises(StorageError, match="looks like the existing intent 'track_order'"):
            index.validate_new(name)
    assert name_key("café") != name_key("cafe")  # an accent is not a look-alike: it stays
