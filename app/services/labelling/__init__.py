"""Labelling: a project's utterances and intents as data (browse, add, edit, label, bulk label, the
Data tab's table), their history and undo, and labelling as a team (assignments, answers,
agreement). The bottom floor: it imports no other services package."""
