"""Editing the slot book and templates through the services: bad input is refused with a message
and changes nothing."""

from __future__ import annotations

import pytest

from app.services import slots as svc
from core.slots import SlotError
from storage.errors import NotFoundError


@pytest.fixture
def shop(ctx):
    from app.services.io import import_utterances
    from storage.utterances import NewUtterance

    import_utterances(
        ctx,
        "shop",
        [NewUtterance("fly me to Berlin", ("book_flight",)), NewUtterance("hi", ("greet",))],
    )
    return "shop"


def test_slot_values_and_templates_are_saved_and_read_back(ctx, shop):
    assert svc.save_slot(ctx, shop, "city", "Berlin\n Paris \n\n") == 2
    assert svc.save_templates(ctx, shop, "book_flight", "fly me to {city}\nto {city} please") == 2
    assert svc.slot_book(ctx, shop) == {"city": ["Berlin", "Paris"]}
    assert svc.templates(ctx, shop, "book_flight") == {
        "book_flight": ["fly me to {city}", "to {city} please"]
    }
    assert svc.templates(ctx, shop, "greet") == {"greet": []}


def test_a_template_naming_a_missing_slot_is_refused_and_nothing_changes(ctx, shop):
    svc.save_slot(ctx, shop, "city", ["Berlin"])
    svc.save_templates(ctx, shop, "book_flight", ["fly me to {city}"])
    with pytest.raises(SlotError, match=r"slot book lacks: day"):
        svc.save_templates(ctx, shop, "book_flight", ["fly to {city}", "fly {day}"])
    assert svc.templates(ctx, shop, "book_flight") == {"book_flight": ["fly me to {city}"]}
    with pytest.raises(NotFoundError):
        svc.save_templates(ctx, shop, "nope", ["fly to {city}"])


def test_empty_or_duplicate_values_are_refused_and_the_old_values_stay(ctx, shop):
    svc.save_slot(ctx, shop, "city", ["Berlin"])
    with pytest.raises(SlotError, match="'Rome' is listed twice"):
        svc.save_slot(ctx, shop, "city", "Rome\nRome")
    with pytest.raises(SlotError, match="at least one value"):
        svc.save_slot(ctx, shop, "city", "\n \n")
    assert svc.slot_book(ctx, shop) == {"city": ["Berlin"]}


def test_a_slot_named_by_a_template_cannot_be_deleted_until_the_template_goes(ctx, shop):
    svc.save_slot(ctx, shop, "city", ["Berlin"])
    svc.save_templates(ctx, shop, "book_flight", ["fly me to {city}"])
    with pytest.raises(SlotError, match="named by templates of book_flight"):
        svc.delete_slot(ctx, shop, "city")
    svc.save_templates(ctx, shop, "book_flight", "")
    svc.delete_slot(ctx, shop, "city")
    assert svc.slot_book(ctx, shop) == {}
    with pytest.raises(SlotError, match="no slot 'city'"):
        svc.delete_slot(ctx, shop, "city")
