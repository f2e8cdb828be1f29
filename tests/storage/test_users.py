"""Users' API token hashes: one per user, replaced by the next, found by hash only."""

from __future__ import annotations

import pytest

from storage.errors import NotFoundError
from storage.users import create_user, set_token_hash, user_by_token_hash


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
