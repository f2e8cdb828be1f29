"""Users' API token hashes (one per user, replaced by the next, found by hash only), and the name
of a removed user."""

from __future__ import annotations

import pytest

from storage.errors import ConflictError, NotFoundError
from storage.tables import User
from storage.users import (
    create_user,
    restore_user,
    set_status,
    set_token_hash,
    user_by_token_hash,
)


def test_a_token_hash_names_its_user_until_replaced_or_revoked(db):
    with db.session() as s:
        create_user(s, "vic", "viewer", "x")
        create_user(s, "dana", "designer", "y")
        set_token_hash(s, "vic", "a" * 64)
        set_token_hash(s, "dana", "b" * 64)
    with db.session() as s:
        assert user_by_token_hash(s, "a" * 64).name == "vic"
        assert user_by_token_hash(s, "b" * 64).name == "dana"
        set_token_hash(s, "vic", "c" * 64)  # a new token replaces the old one
    with db.session() as s:
        with pytest.raises(NotFoundError, match="Unknown or revoked API token"):
            user_by_token_hash(s, "a" * 64)
        assert user_by_token_hash(s, "c" * 64).name == "vic"
        set_token_hash(s, "vic", None)
    with db.session() as s, pytest.raises(NotFoundError, match="Unknown or revoked"):
        user_by_token_hash(s, "c" * 64)
    with db.session() as s, pytest.raises(NotFoundError, match="No user 'nobody'"):
        set_token_hash(s, "nobody", "d" * 64)


def test_a_removed_users_name_is_refused_to_a_new_account_and_restored_only_on_purpose(db):
    with db.session() as s:
        dana = create_user(s, "dana", "designer", "y").id
        set_token_hash(s, "dana", "b" * 64)
        set_status(s, "dana", "removed")
    with db.session() as s, pytest.raises(ConflictError, match="name of a removed user"):
        create_user(s, "dana", "admin", "z")  # it used to bring the row back as an admin
    with db.session() as s:
        assert s.get(User, dana).status == "removed"
        back = restore_user(s, "dana", "z")
        assert (back.id, back.role, back.status, back.password_hash) == (
            dana,
            "designer",
            "active",
            "z",
        )
        assert back.api_token_hash is None
    with db.session() as s, pytest.raises(ConflictError, match="not removed"):
        restore_user(s, "dana", "w")
    with db.session() as s, pytest.raises(ConflictError, match="already a user 'dana'"):
        create_user(s, "dana", "viewer", "w")
