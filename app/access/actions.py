"""Who may do what: the one table of named actions that every door asks. A UI event or a Gradio
API endpoint declares its action (:func:`app.ui.guard.guarded`), a REST route its dependency
(:func:`app.api.security.role`, :func:`app.api.security.project_for`), a CLI command the handle
it opens (:func:`app.cli.common.project`) and its parser entry (``action=``), the upload gate
the actions an upload is for (:data:`UPLOADS`); each names an action by its constant here
(``TRAIN``, ``EXPORT``...), as Label Studio's ``all_permissions.projects_change``: a misspelt
name fails when its module is imported (and in mypy), not when someone calls the door. Anything
else handed to a door is refused (:class:`UnknownAction`) when the door is declared.
An event nobody declared is a *read* (:data:`READ`).

The role says who may (each role includes the ones before it: viewer < designer < admin); what an
item's team rule allows on top is :mod:`app.access.policy`'s, asked by every change whatever its
action. The table of roles in docs/user-guide.md lists each action's events, routes, endpoints
and commands; ``tests/app/ui/test_roles.py`` checks that every door of the app names exactly one
of these, and is refused below its role.

Example:
    >>> TRAIN.role, READ.role, ASSIGN.says
    ('designer', 'viewer', 'assigning utterances')
    >>> action("export") is EXPORT
    True
    >>> need("train")
    Traceback (most recent call last):
    app.access.actions.UnknownAction: No action 'train' in the permissions table (app/access/actions.py): name it by its constant (app.access.actions.TRAIN).
"""

from __future__ import annotations

from dataclasses import dataclass

# The roles, least first: storage.users.ROLES, written out so that importing the table loads no
# database code (every command of the CLI names its action when its module is imported, and
# `intent-studio --help` imports no storage); tests/app/ui/test_permissions_table.py keeps the
# two the same.
ROLES = ("viewer", "designer", "admin")


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


# read the data, maps, evaluation, history, activity, the team's agreement; predict; the
# stakeholder report; candidate intents; merge / split what-ifs
READ = Action("read", "viewer", "reading")
# label from the queue (and undo there), over REST, and a team's answers and reviews
LABEL = Action("label", "designer", "labelling")
# add, edit, relabel, delete an utterance; bulk label; move to a split
EDIT = Action("edit", "designer", "this change")
UNDO = Action("undo", "designer", "undoing a change")  # the Activity tab, REST, the CLI
FIX_DESIGN = Action("fix_design", "designer", "fixing a conflict")  # the Design tab
EDIT_INTENTS = Action("edit_intents", "designer", "changing intents")  # create, rename, merge...
EDIT_SLOTS = Action("edit_slots", "designer", "changing slots")  # the slot book, templates
ADOPT_CANDIDATE = Action("adopt_candidate", "designer", "adopting a candidate intent")
IMPORT = Action("import", "designer", "importing data")  # into a project that exists
# a file of the project's data (every utterance with its intents, in any format), its slot book,
# every annotator's answers: what a viewer may read page by page, but not carry away whole
# (as Label Studio's and Argilla's annotators may not export)
EXPORT = Action("export", "designer", "exporting the project's data")
SAVE_SETTINGS = Action("save_settings", "designer", "changing the project settings")
TRAIN = Action("train", "designer", "training")  # retrain, cancel; activate, pin, prune versions
BUNDLE = Action("bundle", "designer", "a model bundle")  # export, open as read-only
CREATE_PROJECT = Action("create_project", "admin", "creating a project")
ASSIGN = Action("assign", "admin", "assigning utterances")
MANAGE_MEMBERS = Action("manage_members", "admin", "managing members")
MANAGE_USERS = Action("manage_users", "admin", "managing users")  # `intent-studio users`
READ_SECURITY_LOG = Action("read_security_log", "admin", "reading the security log")
# what only the server's operator does, at its command line: serve, run a worker, back up, restore
OPERATE = Action("operate", "admin", "running the server")

ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        READ,
        LABEL,
        EDIT,
        UNDO,
        FIX_DESIGN,
        EDIT_INTENTS,
        EDIT_SLOTS,
        ADOPT_CANDIDATE,
        IMPORT,
        EXPORT,
        SAVE_SETTINGS,
        TRAIN,
        BUNDLE,
        CREATE_PROJECT,
        ASSIGN,
        MANAGE_MEMBERS,
        MANAGE_USERS,
        READ_SECURITY_LOG,
        OPERATE,
    )
}
# The actions a file upload is for (the Data tab's import, which may create a project, and the
# Train tab's "open a bundle"): the upload gate lets in those whose role allows one of them.
UPLOADS = (IMPORT, CREATE_PROJECT, BUNDLE)


def action(name: str) -> Action:
    """The action called ``name`` (a name read from somewhere: a document, a test's table).

    Raises:
        UnknownAction: the table has none by that name.
    """
    found = ACTIONS.get(name)
    if found is None:
        raise UnknownAction(f"No action {name!r} in the permissions table (app/access/actions.py).")
    return found


def checked(given: object) -> Action:
    """``given`` if it is an action of the table (what every door calls when it is declared).

    Raises:
        UnknownAction: anything else, a name included (a door names the constant: a typo then
            fails at import).
    """
    if isinstance(given, Action) and ACTIONS.get(given.name) is given:
        return given
    name = given.name if isinstance(given, Action) else given
    hint = f"app.access.actions.{str(name).upper()}"
    found = ACTIONS.get(str(name))
    raise UnknownAction(
        f"No action {name!r} in the permissions table (app/access/actions.py)"
        + (f": name it by its constant ({hint})." if found is not None else ".")
    )


def need(given: Action) -> str:
    """The least role that may do the action ``given`` (:class:`UnknownAction`: not one of the
    table's)."""
    return checked(given).role
