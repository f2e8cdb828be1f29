"""Platform agents, both ways: Dialogflow ES and CX, Amazon Lex V2, Watson / watsonx Assistant,
LUIS and CLU (one module per platform; the shared rules in :mod:`app.formats.agents.base`).

:func:`read_agent_files` (a zip's or folder's files) and :func:`read_agent_json` (one JSON file)
recognise a format by what the files hold, not by their names, and return None for anything else.
What they read becomes rows and descriptions; the agent itself comes back as
:class:`~app.formats.common.AgentSource` so that :func:`write_agent` can later write back the
intents of the project into it with everything we do not model left exactly as it was.

Example:
    >>> parsed = read_agent_json(b'{"intents": [{"intent": "hi", "examples": [{"text": "hey"}]}],'
    ...                          b' "counterexamples": []}')
    >>> parsed.format, parsed.rows[0].text, parsed.agent.format
    ('Watson Assistant skill', 'hey', 'watson')
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import PurePosixPath

from app.formats.agents import (
    dialogflow_cx,
    dialogflow_cx_json,
    dialogflow_es,
    lex,
    microsoft,
    watson,
)
from app.formats.agents.base import (
    load_json,
    same_or_dumped,
    to_parsed,
)
from app.formats.agents.came_back import compare, spans_by_text, values_left_out, written_back
from app.formats.agents.entities import entities_of
from app.formats.agents.export import (
    AgentFormat,
    plan_export,
)
from app.formats.common import MAX_FILE_BYTES, AgentSource, FormatError, ParsedFile, Row
from core.safe_archive import ArchiveError, read_zip
from core.slots import SlotData

__all__ = [
    "AGENT_FORMATS",
    "AgentFormat",
    "agent_format",
    "read_agent_files",
    "read_agent_json",
    "write_agent",
]

# Zip formats in the order they are tried (Lex's folders are unmistakable; CX before ES, whose
# flat intents folder is what sets them apart), then the JSON ones.
AGENT_FORMATS: tuple[AgentFormat, ...] = (
    lex.FORMAT,
    dialogflow_cx.FORMAT,
    dialogflow_es.FORMAT,
    microsoft.LUIS,
    microsoft.CLU,
    dialogflow_cx_json.JSON_FORMAT,
    watson.FORMAT,
)
_BY_NAME = {f.name: f for f in AGENT_FORMATS}
# Formats without roles: their own notes name each role they leave out.
NO_ROLES = frozenset({"clu", "watson"})
# Formats whose own notes name the slot values and synonyms they leave out.
VALUES_SAID = frozenset({"luis"})


def agent_format(name: str) -> AgentFormat:
    """The agent format called ``name`` (``dialogflow-es``, ``lex-v2``, ...).

    Raises:
        ValueError: an unknown name, listing the known ones.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"Unknown agent format {name!r}; use one of {', '.join(_BY_NAME)}."
        ) from None


def _visible(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """Files without the hidden ones a zip tool adds (``.DS_Store``, ``__MACOSX/``)."""
    return {
        k: v
        for k, v in files.items()
        if not any(p.startswith(".") or p == "__MACOSX" for p in PurePosixPath(k).parts)
    }


def zip_files(files: Mapping[str, bytes]) -> bytes:
    """The files as a zip, in their order, with fixed dates (the same files, the same bytes)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def unzip(content: bytes) -> dict[str, bytes]:
    try:
        return read_zip(content, max_bytes=MAX_FILE_BYTES)
    except ArchiveError as exc:
        raise FormatError(str(exc)) from exc


def read_agent_files(
    files: Mapping[str, bytes], *, language: str | None = None
) -> ParsedFile | None:
    """Read the files of an agent export (a zip's or a folder's, by relative path), or None
    when they are no agent this module knows. ``language``: the language (Lex: the locale id) to
    read, instead of the agent's default.

    Raises:
        FormatError: an agent with problems (each with its file and place); nothing is returned.
    """
    visible = _visible(files)
    fmt = next((f for f in AGENT_FORMATS if f.container == "zip" and f.detect(visible)), None)
    if fmt is None:
        return None
    doc = fmt.read(visible, language)
    kept = AgentSource(fmt.name, zip_files(visible), doc.language if language else "")
    return replace(to_parsed(doc, fmt.title), agent=kept)


def read_agent_json(
    data: bytes, where: str = "The file", *, language: str | None = None
) -> ParsedFile | None:
    """Read one JSON file of an agent (LUIS, CLU, Watson, a Dialogflow CX JSON agent), or None
    when it is JSON of another shape. ``language`` as for :func:`read_agent_files`.

    Raises:
        FormatError: not JSON, nested too deep, or an agent with problems (each with its path).
    """
    doc = load_json(data, where)
    fmt = next((f for f in AGENT_FORMATS if f.container == "json" and f.detect(doc)), None)
    if fmt is None:
        return None
    read = fmt.read(doc, language)
    kept = AgentSource(fmt.name, data, read.language if language else "")
    return replace(to_parsed(read, fmt.title), agent=kept)


def write_agent(
    format: str,
    rows: Iterable[Row],
    intents: Mapping[str, str],
    *,
    kept: AgentSource | None = None,
    name: str = "intent-studio",
    slots: SlotData | None = None,
) -> tuple[bytes, list[str]]:
    """The bytes of an agent (a zip or one JSON file) holding the project, and notes on what
    was left out or renamed.

    Args:
        format: the agent format's name.
        rows: every row of the project.
        intents: every intent of the project -> its description (``""``: none).
        kept: the agent the project was imported from: written back with the project's intents,
            phrases and descriptions, the rest unchanged. Another format's agent, or None, starts
            from an empty agent called ``name``.
        slots: the project's entity annotations and slot book: a phrase the export writes
            carries its annotations, and the entity types they name are defined, where the
            format has a place for them (:mod:`app.formats.agents.entities`).
    """
    fmt = agent_format(format)
    notes = []
    language = None
    if kept is not None and kept.format == fmt.name:
        source = unzip(kept.content) if fmt.container == "zip" else load_json(kept.content, "")
        original: bytes | None = kept.content
        language = kept.language or None
    else:
        if kept is not None:
            notes.append(
                f"The project came from a {_BY_NAME[kept.format].title}: the "
                f"{fmt.title} starts from an empty agent."
                if kept.format in _BY_NAME
                else f"The {fmt.title} starts from an empty agent."
            )
        source = fmt.skeleton(name)
        original = None
    rows = list(rows)
    plan = plan_export(
        fmt.read(source, language),
        rows,
        intents,
        name_rule=fmt.name_rule,
        fallback_takes_phrases=fmt.fallback_takes_phrases,
        test_split=fmt.test_split,
    )
    plan.entities, plan.values = entities_of(rows, slots)
    new = fmt.apply(source, plan)
    payload = zip_files(new) if fmt.container == "zip" else same_or_dumped(new, original)
    back = written_back(fmt, new, plan) if plan.entities or plan.values else None
    if back is not None:  # what it brings back, read as an import reads the agent
        plan.notes += compare(plan, spans_by_text(back), fmt.title, roles=fmt.name not in NO_ROLES)
        if fmt.name not in VALUES_SAID:
            plan.notes += values_left_out(plan, back, fmt.title)
    return payload, notes + plan.notes
