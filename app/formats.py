"""Interchange formats designers already use: Rasa NLU YAML and a folder of ``intent.txt`` files.

Pure functions over plain rows (:class:`storage.utterances.NewUtterance`, aliased :data:`Row`):
nothing here touches a database. A file is validated completely first; any problem raises
:class:`FormatError` listing ``(line, message)`` pairs and no row is returned.

**Rasa NLU YAML** (``version: "3.1"``, ``nlu:`` items ``- intent: name`` with an ``examples: |``
block of ``- text`` lines, or the list form ``examples: [{text: ..., metadata: ...}]``):

- Entity annotations ``[Berlin](city)`` and ``[Berlin]{"entity": "city"}`` are *flattened to their
  surface text* (``Berlin``) on import, because the studio labels intents, not entities; the result
  says how many were flattened (``keep_entity_markup=True`` keeps the markup as typed).
- A multi-intent name ``a+b`` becomes the labels ``("a", "b")``, and a multi-label row is written
  that way.
- Rows of another split than ``train`` are written in the list form with ``metadata: {split: ...}``
  and read back into that split. ``synonym``/``regex``/``lookup`` items and the other sections of a
  Rasa project (``responses``, ``stories``, ...) are skipped with a note; other keys are errors.

**Folder of text files**: ``<intent>.txt`` holds one utterance per line (blank lines are ignored)
for the train split; ``test/<intent>.txt`` for the test split. Intent names are percent-encoded in
file names (``/`` becomes ``%2F``). An utterance in several files of one split is one multi-label
row. A folder or a ``.zip`` of one can be read.

Rows without an intent (the ``unlabelled`` split) have no place in either format and are not
written.

Example:
    >>> rows = [Row("hi there", ("greet",)), Row("bye now", ("bye",))]
    >>> parse_rasa_yaml(dump_rasa_yaml(rows).encode()).rows == sorted(rows, key=lambda r: r.labels)
    True
"""

from __future__ import annotations

import io
import json
import logging
import re
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

import yaml

from core.bundle.safety import BundleError, check_members
from storage.tables import SPLITS
from storage.utterances import MAX_TEXT_CHARS, NewUtterance, is_blank

logger = logging.getLogger(__name__)

Row = NewUtterance
MAX_FILE_BYTES = 25 * 1024 * 1024
MAX_INTENT_CHARS = 120
SHOW_PROBLEMS = 8
RASA_VERSION = "3.1"
RASA_SKIPPED_ITEMS = ("synonym", "regex", "lookup")
RASA_OTHER_SECTIONS = frozenset(
    {
        "responses",
        "stories",
        "rules",
        "intents",
        "entities",
        "slots",
        "forms",
        "actions",
        "session_config",
        "e2e_actions",
        "test_stories",
    }
)
_ENTITY = re.compile(r"\[([^\[\]\n]+)\](?:\([^()\n]+\)|\{[^{}\n]*\})")
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-+/.]*")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "none"})
_SAFE_FILE_CHARS = " -_,()&'+@!=~"


@dataclass
class FormatError(ValueError):
    """A file that cannot be imported: a summary and ``(line, message)`` problems (line 0: the
    whole file). Nothing was imported."""

    summary: str
    problems: list[tuple[int, str]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [self.summary]
        for line, msg in self.problems[:SHOW_PROBLEMS]:
            lines.append(f"  line {line}: {msg}" if line else f"  {msg}")
        if len(self.problems) > SHOW_PROBLEMS:
            lines.append(f"  ... and {len(self.problems) - SHOW_PROBLEMS} more problem(s)")
        lines.append("Nothing was imported.")
        return "\n".join(lines)


@dataclass(frozen=True)
class ParsedFile:
    """Rows read from an interchange file, with what was changed or skipped on the way."""

    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    flattened_entities: int = 0


# ------------------------------------------------------------------------------------ validation


def _decode(data: bytes, where: str = "The file") -> str:
    if len(data) > MAX_FILE_BYTES:
        raise FormatError(f"{where} is {len(data) / 2**20:.1f} MB; the limit is 25 MB.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(
            f"{where} is not valid UTF-8.", [(line, f"invalid byte at offset {exc.start}")]
        ) from exc


def _check_text(text: str) -> str | None:
    """A problem with an utterance text, or None."""
    if is_blank(text):
        return "empty text"
    if len(text) > MAX_TEXT_CHARS:
        return f"text is {len(text)} characters (limit {MAX_TEXT_CHARS})"
    if "\x00" in text:
        return "text contains a NUL character"
    return None


def _check_intent(name: str) -> str | None:
    if not name:
        return "empty intent name"
    if len(name) > MAX_INTENT_CHARS:
        return f"intent name longer than {MAX_INTENT_CHARS} characters"
    if "|" in name:
        return f"intent name {name!r} contains '|'"
    return None


def _finish(found: list[tuple[int, str, Row]], problems: list[tuple[int, str]]) -> list[Row]:
    """Refuse duplicates (same text twice) and raise on any problem; else the rows."""
    seen: dict[str, tuple[int, str]] = {}
    for line, where, row in found:
        if row.text in seen:
            first_line, first_where = seen[row.text]
            at = (
                f"{first_where} line {first_line}" if first_where != where else f"line {first_line}"
            )
            problems.append((line, f"{where}duplicate of {at}: {row.text[:60]!r}"))
        else:
            seen[row.text] = (line, where)
    if problems:
        problems.sort(key=lambda p: p[0])
        raise FormatError(f"{len(problems)} problem(s) in the file.", problems)
    if not found:
        raise FormatError("The file has no utterances.")
    return [row for _, _, row in found]


# ---------------------------------------------------------------------------------- Rasa NLU YAML


def _flatten(text: str, keep: bool) -> tuple[str, int]:
    if keep:
        return text, 0
    flat, n = _ENTITY.subn(lambda m: m.group(1), text)
    return flat, n


def _node_key(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "?"


def parse_rasa_yaml(
    data: bytes, *, keep_entity_markup: bool = False, multi_intent_separator: str | None = "+"
) -> ParsedFile:
    """Read a Rasa NLU YAML file into rows.

    Args:
        data: the file's bytes (UTF-8).
        keep_entity_markup: keep ``[Berlin](city)`` as typed instead of flattening to ``Berlin``.
        multi_intent_separator: split ``a+b`` intent names into several labels (None: never).

    Raises:
        FormatError: bad UTF-8 or YAML, unknown keys, empty or too long texts, duplicates.

    Example:
        >>> doc = b'nlu:\\n- intent: greet\\n  examples: |\\n    - hi [Ana](name)\\n'
        >>> parsed = parse_rasa_yaml(doc)
        >>> parsed.rows[0].text, parsed.flattened_entities
        ('hi Ana', 1)
    """
    text = _decode(data)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        raise FormatError(
            "The file is not valid YAML.", [(line, str(exc).splitlines()[0])]
        ) from exc
    if not isinstance(root, yaml.MappingNode):
        raise FormatError("A Rasa NLU file is a mapping with an 'nlu:' list.")
    problems: list[tuple[int, str]] = []
    notes: list[str] = []
    found: list[tuple[int, str, Row]] = []
    flattened = 0
    skipped: dict[str, int] = {}
    nlu: yaml.Node | None = None
    for key_node, value_node in root.value:
        key = _node_key(key_node)
        if key == "nlu":
            nlu = value_node
        elif key == "version":
            version = _node_key(value_node)
            if not version.startswith("3"):
                notes.append(f"Rasa format version {version!r}; read as 3.x.")
        elif key in RASA_OTHER_SECTIONS:
            notes.append(f"Skipped the {key!r} section (not NLU training data).")
        else:
            problems.append((key_node.start_mark.line + 1, f"unknown key {key!r}"))
    if nlu is None:
        raise FormatError("The file has no 'nlu:' section.", problems)
    if not isinstance(nlu, yaml.SequenceNode):
        raise FormatError("'nlu:' must be a list.", [(nlu.start_mark.line + 1, "not a list")])
    for item in nlu.value:
        line = item.start_mark.line + 1
        if not isinstance(item, yaml.MappingNode):
            problems.append((line, "an nlu item must be a mapping such as '- intent: name'"))
            continue
        fields = {_node_key(k): v for k, v in item.value}
        kind = next((k for k in RASA_SKIPPED_ITEMS if k in fields), None)
        if "intent" not in fields:
            if kind is not None:
                skipped[kind] = skipped.get(kind, 0) + 1
            else:
                problems.append((line, f"unknown nlu item with keys {sorted(fields)}"))
            continue
        for k in fields:
            if k not in ("intent", "examples", "metadata"):
                problems.append((line, f"unknown key {k!r} in intent item"))
        name = _node_key(fields["intent"])
        if multi_intent_separator and multi_intent_separator in name:
            labels = tuple(p.strip() for p in name.split(multi_intent_separator))
        else:
            labels = (name.strip(),)
        bad = [msg for n in labels if (msg := _check_intent(n))]
        if bad or len(set(labels)) != len(labels):
            problems.append((line, bad[0] if bad else f"the same intent twice in {name!r}"))
            continue
        examples = fields.get("examples")
        if examples is None:
            notes.append(f"Intent {name!r} has no examples.")
            continue
        for ex_line, raw, split in _rasa_examples(examples, problems):
            flat, n = _flatten(raw.strip(), keep_entity_markup)
            flattened += n
            if (msg := _check_text(flat)) is not None:
                problems.append((ex_line, msg))
                continue
            found.append((ex_line, "", Row(flat, tuple(sorted(labels)), split)))
    rows = _finish(found, problems)
    for kind, count in sorted(skipped.items()):
        notes.append(f"Skipped {count} {kind} item(s) (not intent examples).")
    if flattened:
        notes.append(
            f"Flattened {flattened} entity annotation(s) such as [Berlin](city) to their text."
        )
    return ParsedFile(rows, notes, flattened)


def _rasa_examples(node: yaml.Node, problems: list[tuple[int, str]]) -> list[tuple[int, str, str]]:
    """``(line, text, split)`` of each example in an ``examples:`` value."""
    out: list[tuple[int, str, str]] = []
    if isinstance(node, yaml.ScalarNode):
        # Literal/folded blocks start on the line after the indicator.
        first = node.start_mark.line + (2 if node.style in ("|", ">") else 1)
        for i, raw in enumerate(str(node.value).split("\n")):
            stripped = raw.strip()
            if not stripped:
                continue
            if not stripped.startswith("-"):
                problems.append((first + i, f"an example line must start with '- ': {raw[:40]!r}"))
                continue
            out.append((first + i, stripped[1:], "train"))
        return out
    if not isinstance(node, yaml.SequenceNode):
        problems.append((node.start_mark.line + 1, "'examples' must be a block or a list"))
        return out
    for item in node.value:
        line = item.start_mark.line + 1
        if isinstance(item, yaml.ScalarNode):
            out.append((line, str(item.value), "train"))
            continue
        if not isinstance(item, yaml.MappingNode):
            problems.append((line, "an example must be text or a mapping with 'text'"))
            continue
        data: Any = yaml.safe_load(yaml.serialize(item))
        extra = set(data) - {"text", "metadata"}
        if extra or not isinstance(data.get("text"), str):
            problems.append((line, f"an example needs 'text' (unknown keys {sorted(extra)})"))
            continue
        meta = data.get("metadata") or {}
        split = str(meta.get("split", "train")) if isinstance(meta, dict) else "train"
        if split not in SPLITS or split == "unlabelled":
            problems.append((line, f"unknown split {split!r} in metadata"))
            continue
        out.append((line, data["text"], split))
    return out


def _yaml_name(name: str) -> str:
    if _PLAIN_NAME.fullmatch(name) and name.lower() not in _YAML_WORDS:
        return name
    return json.dumps(name, ensure_ascii=False)


def _block_safe(text: str) -> bool:
    return all(c == "\t" or c.isprintable() for c in text) and text == text.strip()


def _grouped(rows: Iterable[Row], separator: str) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = {}
    for row in rows:
        if not row.labels:
            continue
        bad = [n for n in row.labels if separator and separator in n and len(row.labels) == 1]
        if bad:
            raise ValueError(f"Intent {bad[0]!r} contains {separator!r}, the multi-intent mark.")
        groups.setdefault(separator.join(sorted(row.labels)), []).append(row)
    return dict(sorted(groups.items()))


def dump_rasa_yaml(rows: Iterable[Row], *, multi_intent_separator: str = "+") -> str:
    """Write labelled rows as Rasa NLU YAML (``version: "3.1"``); unlabelled rows are left out.

    Example:
        >>> print(dump_rasa_yaml([Row("hello", ("greet",))]), end="")
        version: "3.1"
        nlu:
        - intent: greet
          examples: |
            - hello
    """
    lines = [f'version: "{RASA_VERSION}"', "nlu:"]
    for name, group in _grouped(rows, multi_intent_separator).items():
        lines.append(f"- intent: {_yaml_name(name)}")
        if all(r.split == "train" and _block_safe(r.text) for r in group):
            lines.append("  examples: |")
            lines += [f"    - {r.text}" for r in group]
            continue
        lines.append("  examples:")
        for r in group:
            lines.append(f"  - text: {json.dumps(r.text, ensure_ascii=False)}")
            if r.split != "train":
                lines.append(f"    metadata: {{split: {r.split}}}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- folder of .txt files


def intent_file_name(intent: str) -> str:
    """The file name of an intent (percent-encoded where a file system would object).

    Example:
        >>> intent_file_name("card/lost")
        'card%2Flost.txt'
    """
    encoded = quote(intent, safe=_SAFE_FILE_CHARS)
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    return encoded + ".txt"


def dump_intent_files(rows: Iterable[Row]) -> dict[str, str]:
    """Relative path -> content: ``<intent>.txt`` for train rows, ``<split>/<intent>.txt`` else.

    A multi-label row is written into the file of each of its intents; unlabelled rows are left
    out.
    """
    files: dict[str, list[str]] = {}
    for row in rows:
        if not row.labels:
            continue
        if "\n" in row.text or "\r" in row.text or row.text != row.text.strip():
            raise ValueError(f"{row.text[:40]!r} cannot be one line of a text file.")
        folder = "" if row.split == "train" else f"{row.split}/"
        for name in row.labels:
            files.setdefault(folder + intent_file_name(name), []).append(row.text)
    return {path: "\n".join(texts) + "\n" for path, texts in sorted(files.items())}


def write_intent_folder(rows: Iterable[Row], out: Path) -> list[Path]:
    """Write :func:`dump_intent_files` into the folder ``out`` (created; must hold no .txt)."""
    out = Path(out)
    if out.exists() and any(out.rglob("*.txt")):
        raise FileExistsError(f"{out} already holds .txt files")
    written = []
    for rel, content in dump_intent_files(rows).items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


def write_intent_zip(rows: Iterable[Row]) -> bytes:
    """The same files as :func:`write_intent_folder`, as the bytes of a ``.zip``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, content in dump_intent_files(rows).items():
            zf.writestr(rel, content.encode("utf-8"))
    return buf.getvalue()


def parse_intent_files(files: Mapping[str, bytes]) -> ParsedFile:
    """Read ``{relative path: bytes}`` of intent text files into rows.

    Hidden files (``.DS_Store``) and ``__MACOSX/`` are ignored; any other file that is not
    ``<intent>.txt`` or ``<split>/<intent>.txt`` is an error.

    Example:
        >>> parse_intent_files({"greet.txt": b"hi\\nhello\\n"}).rows[1]
        NewUtterance(text='hello', labels=('greet',), split='train', context='')
    """
    problems: list[tuple[int, str]] = []
    # (split, text) -> (first line, file, labels)
    merged: dict[tuple[str, str], tuple[int, str, list[str]]] = {}
    order: list[tuple[str, str]] = []
    for rel in sorted(files):
        parts = PurePosixPath(rel).parts
        if any(p.startswith(".") for p in parts) or parts[0] == "__MACOSX":
            continue
        if len(parts) == 1:
            split, fname = "train", parts[0]
        elif len(parts) == 2 and parts[0] in ("train", "test"):
            split, fname = parts[0], parts[1]
        else:
            problems.append((0, f"{rel}: unexpected file (use <intent>.txt or test/<intent>.txt)"))
            continue
        if not fname.endswith(".txt"):
            problems.append((0, f"{rel}: unexpected file (only .txt files hold utterances)"))
            continue
        intent = unquote(fname[: -len(".txt")])
        if (msg := _check_intent(intent.strip())) is not None:
            problems.append((0, f"{rel}: {msg}"))
            continue
        try:
            content = _decode(files[rel], rel)
        except FormatError as exc:
            problems += [(line, f"{rel}: {msg}") for line, msg in exc.problems] or [
                (0, exc.summary)
            ]
            continue
        seen_here: dict[str, int] = {}
        for n, raw in enumerate(content.splitlines(), 1):
            text = raw.strip()
            if not text:
                continue
            if (msg := _check_text(text)) is not None:
                problems.append((n, f"{rel}: {msg}"))
                continue
            if text in seen_here:
                problems.append((n, f"{rel}: duplicate of line {seen_here[text]}: {text[:60]!r}"))
                continue
            seen_here[text] = n
            key = (split, text)
            if key in merged:  # the same utterance under another intent: multi-label
                merged[key][2].append(intent.strip())
            else:
                merged[key] = (n, rel, [intent.strip()])
                order.append(key)
    found = [
        (merged[key][0], f"{merged[key][1]}: ", Row(key[1], tuple(sorted(merged[key][2])), key[0]))
        for key in order
    ]
    rows = _finish(found, problems)
    multi = sum(1 for r in rows if len(r.labels) > 1)
    notes = (
        [f"{multi} utterance(s) appear in several intent files: read as multi-label."]
        if multi
        else []
    )
    return ParsedFile(rows, notes)


def read_intent_folder(path: Path) -> ParsedFile:
    """Read a folder of intent ``.txt`` files, or a ``.zip`` of one (checked like a bundle)."""
    path = Path(path)
    files: dict[str, bytes] = {}
    if path.is_dir():
        total = 0
        for p in sorted(path.rglob("*")):
            if p.is_symlink():
                raise FormatError(f"{p.relative_to(path)} is a symbolic link; refusing.")
            if p.is_file():
                total += p.stat().st_size
                if total > MAX_FILE_BYTES:
                    raise FormatError("The folder holds more than 25 MB of files.")
                files[p.relative_to(path).as_posix()] = p.read_bytes()
    else:
        try:
            with zipfile.ZipFile(path) as zf:
                infos = zf.infolist()
                check_members(infos, max_bytes=MAX_FILE_BYTES, allowed_suffixes=None)
                files = {i.filename: zf.read(i) for i in infos if not i.is_dir()}
        except BundleError as exc:
            raise FormatError(str(exc)) from exc
        except (zipfile.BadZipFile, OSError) as exc:
            raise FormatError(f"{path.name} is not a readable folder or zip: {exc}") from exc
    # A zip of a single top folder ("intents/greet.txt"): read what is inside it.
    tops = {PurePosixPath(k).parts[0] for k in files if not k.startswith((".", "__MACOSX"))}
    if len(tops) == 1 and not next(iter(tops)).endswith(".txt"):
        top = next(iter(tops))
        if top not in ("train", "test"):
            files = {k[len(top) + 1 :]: v for k, v in files.items() if k.startswith(top + "/")}
    return parse_intent_files(files)


def read_interchange(path: Path) -> ParsedFile:
    """Read any interchange file by its kind: ``.yml``/``.yaml`` (Rasa), a folder or ``.zip``."""
    path = Path(path)
    if path.suffix.lower() in (".yml", ".yaml"):
        return parse_rasa_yaml(path.read_bytes())
    if path.is_dir() or path.suffix.lower() == ".zip":
        return read_intent_folder(path)
    raise FormatError(f"Unsupported file {path.name!r}: use .yml, .yaml, .zip or a folder.")
