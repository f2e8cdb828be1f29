"""A project's kept platform agent on a real database (migrated to 0007): one per project, replaced
by the next import, gone with its project."""

from __future__ import annotations

from storage.agents import KeptAgent, forget_agent, keep_agent, kept_agent
from storage.projects import delete_project
from storage.tables import ImportedAgent


def test_an_agent_is_kept_as_its_bytes_and_the_next_one_replaces_it(db, project):
    with db.session() as s:
        assert kept_agent(s, project) is None
        assert keep_agent(s, project, "lex-v2", b"PK\x03\x04zip") is None
    with db.session() as s:
        assert kept_agent(s, project) == KeptAgent("lex-v2", b"PK\x03\x04zip")
        assert keep_agent(s, project, "luis", b"{}") == "lex-v2"
    with db.session() as s:
        assert kept_agent(s, project) == KeptAgent("luis", b"{}")
        assert forget_agent(s, project) and not forget_agent(s, project)
        assert kept_agent(s, project) is None


def test_the_kept_agent_goes_with_its_project(db, project):
    with db.session() as s:
        keep_agent(s, project, "watson", b"{}")
    with db.session() as s:
        delete_project(s, project)
    with db.session() as s:
        assert s.query(ImportedAgent).count() == 0
