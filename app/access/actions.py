"""Who may do what: the one table of named actions that every door asks. A UI event declares its
action (:func:`app.ui.guard.guarded`), a REST route its dependency (:func:`app.api.security.role`,
:func:`app.api.security.project_for`), a CLI command the handle it opens
(:func:`app.cli.common.project`); each looks the role up here, by name, and an action the table
does not name is refused (:class:`UnknownAction`) when the door is declared, before anyone calls it.
An event nobody declared is a *read* (:data:`READ`).

The role says who may (each role includes the ones before it: viewer < designer < admin); what an
item's team rule allows on top is :mod:`app.access.policy`'s, asked by every change whatever its
action. The table of roles in docs/user-guide.md lists each action's events and routes;
``tests/app/ui/test_roles.py`` checks that every door of the app names exactly one of these.

Example:
    >>> need("train"), need("read"), ACTIONS["assign"].says
    ('designer', 'viewer', 'assigning utterances')
    >>> need("frobnicate")
    Traceback (most recent call last):
    app.access.actions.UnknownAction: No action 'frobnicate' in the permissions table (app/access/actions.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.users import ROLES


class UnknownAction(KeyError):
    """A door asked for an action the table does not name: refused."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Action:
    """One named action: the least role that may do it, and what a refusal calls it."""

    name: str
    role: str
    says: str  # "<says> needs the <role> role"

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"action {self.name!r}: no role {self.role!r}")


READ = "read"

ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        # read the data, maps, evaluation, history, activity, the team's agreement; predict;
        # download the report; candidate intents; merge / split what-ifs
        Action(READ, "viewer", "reading"),
        # label from the queue (and undo there), over REST, and a team's answers and reviews
        Action("label", "designer", "labelling"),
        # add, edit, relabel, delete an utterance; bulk label; move to a split
        Action("edit", "designer", "this change"),
        Action("undo", "designer", "undoing a change"),  # the Activity tab, REST
        Action("fix_design", "designer", "fixing a conflict"),  # the Design tab
        Action("edit_intents", "designer", "changing intents"),  # create, rename, merge, ...
        Action("edit_slots", "designer", "changing slots"),  # the slot book, templates
        Action("adopt_candidate", "designer", "adopting a candidate intent"),
        Action("import_export", "designer", "importing or exporting data"),
        Action("save_settings", "designer", "changing the project settings"),
        Action("train", "designer", "training"),  # retrain, cancel, activate a version
        Action("bundle", "designer", "a model bundle"),  # export, open as read-only
        Action("create_project", "admin", "creating a project"),
        Action("assign", "admin", "assigning utterances"),
        Action("manage_members", "admin", "managing members"),
        Action("manage_users", "admin", "managing users"),  # `intent-studio users`
        Action("read_security_log", "admin", "reading the security log"),
    )
}


def action(name: str) -> Action:
    """The action called ``name``.

    Raises:
        UnknownAction: the table has none by that name.
    """
    found = ACTIONS.get(name)
    if found is None:
        raise UnknownAction(f"No action {name!r} in the permissions table (app/access/actions.py).")
    return found


def need(name: str) -> str:
    """The least role that may do the action ``name`` (:class:`UnknownAction`: none such)."""
    return action(name).role
