"""Editing the slot book and templates through the services: bad input is refused with a message
and changes nothing."""

from __future__ import annotations

import pytest

from app.services.design import slots as svc
from app.services.projects.io import destination
from core.slots import SlotError
from storage.errors import NotFoundError
from tests.handles import live


@pytest.fixture
def shop(serving_state):
    from app.services.projects.io import import_utterances
    from storage.utterances import NewUtterance

    import_utterances(
        serving_state.db,
        destination(serving_state.db, "shop"),
        [NewUtterance("fly me to Berlin", ("book_flight",)), NewUtterance("hi", ("greet",))],
    )
    return live(serving_state, "shop")


def test_slot_values_and_templates_are_saved_and_read_back(serving_state, shop):
    assert (
        svc.save_slot(serving_state.db, live(serving_state, shop), "city", "Berlin\n Paris \n\n")
        == 2
    )
    assert (
        svc.save_templates(
            serving_state.db,
            live(serving_state, shop),
            "book_flight",
            "fly me to {city}\nto {city} please",
        )
        == 2
    )
    assert svc.slot_book(serving_state.db, live(serving_state, shop)) == {
        "city": ["Berlin", "Paris"]
    }
    assert svc.templates(serving_state.db, live(serving_state, shop), "book_flight") == {
        "book_flight": ["fly me to {city}", "to {city} please"]
    }
    assert svc.templates(serving_state.db, live(serving_state, shop), "greet") == {"greet": []}


def test_a_template_naming_a_missing_slot_is_refused_and_nothing_changes(serving_state, shop):
    svc.save_slot(serving_state.db, live(serving_state, shop), "city", ["Berlin"])
    svc.save_templates(
        serving_state.db, live(serving_state, shop), "book_flight", ["fly me to {city}"]
    )
    with pytest.raises(SlotError, match=r"slot book lacks: day"):
        svc.save_templates(
            serving_state.db,
            live(serving_state, shop),
            "book_flight",
            ["fly to {city}", "fly {day}"],
        )
    assert svc.templates(serving_state.db, live(serving_state, shop), "book_flight") == {
        "book_flight": ["fly me to {city}"]
    }
    with pytest.raises(NotFoundError):
        svc.save_templates(serving_state.db, live(serving_state, shop), "nope", ["fly to {city}"])


def test_empty_or_duplicate_values_are_refused_and_the_old_values_stay(serving_state, shop):
    svc.save_slot(serving_state.db, live(serving_state, shop), "city", ["Berlin"])
    with pytest.raises(SlotError, match="'Rome' is listed twice"):
        svc.save_slot(serving_state.db, live(serving_state, shop), "city", "Rome\nRome")
    with pytest.raises(SlotError, match="at least one value"):
        svc.save_slot(serving_state.db, live(serving_state, shop), "city", "\n \n")
    assert svc.slot_book(serving_state.db, live(serving_state, shop)) == {"city": ["Berlin"]}


def test_a_slot_named_by_a_template_cannot_be_deleted_until_the_template_goes(serving_state, shop):
    svc.save_slot(serving_state.db, live(serving_state, shop), "city", ["Berlin"])
    svc.save_templates(
        serving_state.db, live(serving_state, shop), "book_flight", ["fly me to {city}"]
    )
    with pytest.raises(SlotError, match="named by templates of book_flight"):
        svc.delete_slot(serving_state.db, live(serving_state, shop), "city")
    svc.save_templates(serving_state.db, live(serving_state, shop), "book_flight", "")
    svc.delete_slot(serving_state.db, live(serving_state, shop), "city")
    assert svc.slot_book(serving_state.db, live(serving_state, shop)) == {}
    with pytest.raises(SlotError, match="no slot 'city'"):
        svc.delete_slot(serving_state.db, live(serving_state, shop), "city")


RASA = b"""version: "3.1"
nlu:
- intent: book_flight
  examples: |
    - fly me to [Berlin](city)
    - from [Rome]{"entity": "city", "role": "from"} to [Oslo](city)
- intent: greet
  examples: |
    - hi there
- lookup: city
  examples: |
    - Paris
"""


def test_a_rasa_import_keeps_entities_and_lookups_and_its_export_round_trips(
    serving_state, tmp_path
):
    from app.services.projects.export import export_project
    from app.services.projects.io import import_file

    src = tmp_path / "nlu.yml"
    src.write_bytes(RASA)
    result = import_file(serving_state.db, destination(serving_state.db, "travel"), src)
    assert any("template(s)" in n for n in result.notes)
    book = svc.slot_book(serving_state.db, live(serving_state, "travel"))
    assert book == {"city": ["Berlin", "Rome", "Oslo", "Paris"]}
    out = tmp_path / "out.yml"
    export_project(serving_state.db, live(serving_state, "travel"), out)
    assert "- fly me to [Berlin](city)" in out.read_text()
    import_file(serving_state.db, destination(serving_state.db, "copy"), out)
    assert svc.export_slot_data(
        serving_state.db, live(serving_state, "copy")
    ) == svc.export_slot_data(serving_state.db, live(serving_state, "travel"))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_csv_or_jsonl_export_carries_the_annotations_into_another_project(
    serving_state, tmp_path, suffix
):
    """Issue 56 row 14: CSV and JSONL exports dropped entity annotations without a note. They
    carry them now, and the export names the one lookup value no annotation brings back."""
    from app.services.projects.export import export_project
    from app.services.projects.io import import_file

    src = tmp_path / "nlu.yml"
    src.write_bytes(RASA)
    import_file(serving_state.db, destination(serving_state.db, "travel"), src)
    out = tmp_path / f"out{suffix}"
    result = export_project(serving_state.db, live(serving_state, "travel"), out)
    assert result.notes == [
        "Left out 1 slot value(s) and 0 template(s) that no annotated utterance carries: CSV "
        "and JSONL files have no place for them; export the slot book (slots.yml) to keep them."
    ]
    import_file(serving_state.db, destination(serving_state.db, "copy"), out)
    travel = svc.export_slot_data(serving_state.db, live(serving_state, "travel"))
    copy = svc.export_slot_data(serving_state.db, live(serving_state, "copy"))
    assert copy.entities == travel.entities and copy.templates == travel.templates
    assert copy.book == {"city": ["Berlin", "Rome", "Oslo"]}  # Paris was a lookup value only


def test_a_slot_book_file_adds_to_an_existing_project_and_a_bad_one_changes_nothing(
    serving_state, shop, tmp_path
):
    from app.services.projects.export import export_slot_book
    from app.services.projects.io import import_file

    good = tmp_path / "slots.yml"
    good.write_text(
        "slot_book:\n  city: [Berlin, Paris]\ntemplates:\n  book_flight: ['to {city}']\n"
    )
    res = import_file(serving_state.db, destination(serving_state.db, shop), good)
    assert res.inserted == 0
    assert svc.templates(serving_state.db, live(serving_state, shop), "book_flight") == {
        "book_flight": ["to {city}"]
    }
    bad = tmp_path / "bad.yml"
    bad.write_text("slot_book:\n  day: [today]\ntemplates:\n  book_flight: ['at {time}']\n")
    with pytest.raises(SlotError, match="slot book lacks: time"):
        import_file(serving_state.db, destination(serving_state.db, shop), bad)
    assert "day" not in svc.slot_book(serving_state.db, live(serving_state, shop))
    more = tmp_path / "more.yml"
    more.write_text("templates:\n  greet: ['hi from {city}']\n")  # a slot the project has
    import_file(serving_state.db, destination(serving_state.db, shop), more)
    assert svc.templates(serving_state.db, live(serving_state, shop), "greet") == {
        "greet": ["hi from {city}"]
    }
    out = tmp_path / "again.yml"
    assert export_slot_book(serving_state.db, live(serving_state, shop), out) == 2
    assert "to {city}" in out.read_text()
