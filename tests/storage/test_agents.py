"""A project's kept platform agent on a real database (migrated to 0008): one per project, replaced
by the next import, gone with its project; the language read is kept with it."""

from __future__ import annotations

from storage.agents import KeptAgent, forget_agent, keep_agent, kept_agent
from storage.projects import delete_project
from storage.tables import ImportedAgent
from tests.storage.conftest import old_database


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


def test_the_language_read_is_kept_and_an_agent_kept_before_it_reads_as_the_default(
    db, project, tmp_path
):
    with db.session() as s:
        keep_agent(s, project, "lex-v2", b"zip", "de_DE")
    with db.session() as s:
        assert kept_agent(s, project) == KeptAgent("lex-v2", b"zip", "de_DE")

    from storage.db import Database

    url = old_database(
        tmp_path / "old.db",
        "0007",
        "INSERT INTO projects (name, description, base_encoder, read_only, settings, created_at,"
        " version) VALUES ('bank', '', 'minilm', 0, '{}', '2026-01-01', 1)",
        "INSERT INTO imported_agents (project_id, format, content, sha256, created_at)"
        " VALUES (1, 'luis', X'7B7D', 'x', '2026-01-01')",
    )
    old = Database(url)
    with old.session() as s:
        assert kept_agent(s, 1) == KeptAgent("luis", b"{}", "")
    old.dispose()
