"""Import and export of utterances as CSV or JSONL.

Accepted columns: ``text`` plus ``label`` (one intent) or ``labels`` (``|``-separated, empty = no
intent), optional ``split`` (train / test / unlabelled; default: train when labelled, else
unlabelled) and ``context``. A file is validated completely before anything is written, and written
in one transaction: either every row lands or none does.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from app.auth import current_user_id
from app.context import AppContext
from app.formats import FormatError as ImportProblem
from app.formats import dump_rasa_yaml, read_interchange, write_intent_folder, write_intent_zip
from storage.imports import import_rows
from storage.projects import create_project, get_project
from storage.tables import SPLITS
from storage.utterances import MAX_TEXT_CHARS, NewUtterance, is_blank, list_utterances

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 25 * 1024 * 1024
MAX_ROWS = 200_000


@dataclass(frozen=True)
class ImportResult:
    project: str
    inserted: int
    updated: int
    intents_created: list[str]
    notes: list[str] = field(default_factory=list)

    def message(self) -> str:
        names = self.intents_created
        more = f" and {len(names) - 8} more" if len(names) > 8 else ""
        created = f"; {len(names)} new intent(s): {', '.join(names[:8])}{more}" if names else ""
        notes = "".join(f" Note: {n}" for n in self.notes)
        return (
            f"Imported {self.inserted} utterance(s) into {self.project!r}, "
            f"updated {self.updated}{created}.{notes}"
        )


def _split_labels(raw: object) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, list):
        return [str(x).strip() for x in raw]
    text = str(raw).strip()
    return [p.strip() for p in text.split("|")] if text else []


def _check_row(
    line: int, text: object, raw_labels: object, split: object, context: object
) -> tuple[NewUtterance | None, list[tuple[int, str]]]:
    problems: list[tuple[int, str]] = []
    if not isinstance(text, str) or is_blank(text):
        return None, [(line, "empty text")]
    clean = text.strip()
    if len(clean) > MAX_TEXT_CHARS:
        problems.append((line, f"text is {len(clean)} characters (limit {MAX_TEXT_CHARS})"))
    if "\x00" in clean:
        problems.append((line, "text contains a NUL character"))
    labels = _split_labels(raw_labels)
    if any(not name for name in labels):
        problems.append((line, f"empty intent name in labels {raw_labels!r}"))
    if len(set(labels)) != len(labels):
        problems.append((line, f"the same intent twice in labels {raw_labels!r}"))
    if any(len(name) > 120 for name in labels):
        problems.append((line, "an intent name is longer than 120 characters"))
    split_value = (
        str(split).strip() if split not in (None, "") else ("train" if labels else "unlabelled")
    )
    if split_value not in SPLITS:
        problems.append((line, f"unknown split {split_value!r} (use {', '.join(SPLITS)})"))
    if split_value == "unlabelled" and labels:
        problems.append((line, "an unlabelled row cannot carry labels"))
    if problems:
        return None, problems
    ctx = str(context).strip() if context not in (None, "") else ""
    return NewUtterance(clean, tuple(sorted(labels)), split_value, ctx), []


def _decode(data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise ImportProblem(
            f"The file is {len(data) / 2**20:.1f} MB; the limit is {MAX_FILE_BYTES / 2**20:.0f} MB. "
            "Split it into smaller files."
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportProblem(
            "The file is not valid UTF-8.", [(line, f"invalid byte at offset {exc.start}")]
        ) from exc


def _finish(
    rows: list[tuple[int, NewUtterance]], problems: list[tuple[int, str]]
) -> list[NewUtterance]:
    seen: dict[str, int] = {}
    for line, row in rows:
        if row.text in seen:
            problems.append((line, f"duplicate of line {seen[row.text]}: {row.text[:60]!r}"))
        else:
            seen[row.text] = line
    if problems:
        problems.sort()
        raise ImportProblem(f"{len(problems)} problem(s) in the file.", problems)
    if not rows:
        raise ImportProblem("The file has no rows.")
    if len(rows) > MAX_ROWS:
        raise ImportProblem(f"The file has {len(rows)} rows; the limit is {MAX_ROWS}.")
    return [r for _, r in rows]


def parse_csv(data: bytes) -> list[NewUtterance]:
    text = _decode(data)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise ImportProblem(f"Not a readable CSV file: {exc}") from exc
    reader.fieldnames = header
    if "text" not in header or not ({"label", "labels"} & set(header)):
        raise ImportProblem(
            f"Missing columns: need 'text' and 'label' or 'labels'; found {', '.join(header) or 'none'}."
        )
    label_col = "labels" if "labels" in header else "label"
    rows: list[tuple[int, NewUtterance]] = []
    problems: list[tuple[int, str]] = []
    try:
        for record in reader:
            line = reader.line_num
            if None in record:
                problems.append((line, "more cells than columns"))
                continue
            row, errs = _check_row(
                line,
                record.get("text"),
                record.get(label_col),
                record.get("split"),
                record.get("context"),
            )
            problems.extend(errs)
            if row is not None:
                rows.append((line, row))
            if len(rows) > MAX_ROWS:
                break
    except csv.Error as exc:
        problems.append((reader.line_num, f"malformed CSV: {exc}"))
    return _finish(rows, problems)


def parse_jsonl(data: bytes) -> list[NewUtterance]:
    text = _decode(data)
    rows: list[tuple[int, NewUtterance]] = []
    problems: list[tuple[int, str]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append((line_no, f"not valid JSON: {exc.msg}"))
            continue
        if not isinstance(obj, dict):
            problems.append((line_no, "each line must be a JSON object"))
            continue
        if "text" not in obj or not ({"label", "labels"} & set(obj)):
            problems.append((line_no, "needs 'text' and 'label' or 'labels'"))
            continue
        labels = obj.get("labels", obj.get("label"))
        if isinstance(labels, list) and not all(isinstance(x, str) for x in labels):
            problems.append((line_no, "labels must be strings"))
            continue
        row, errs = _check_row(
            line_no, obj.get("text"), labels, obj.get("split"), obj.get("context")
        )
        problems.extend(errs)
        if row is not None:
            rows.append((line_no, row))
    return _finish(rows, problems)


def parse_file(path: str | Path, data: bytes | None = None) -> list[NewUtterance]:
    """Validate a CSV/JSONL file completely; raise :class:`ImportProblem` listing bad lines."""
    p = Path(path)
    if data is None and p.is_dir():
        return read_interchange(p).rows
    if data is None:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ImportProblem(
                f"The file is {size / 2**20:.1f} MB; the limit is {MAX_FILE_BYTES / 2**20:.0f} MB."
            )
        data = p.read_bytes()
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return parse_jsonl(data)
    if suffix in (".csv", ".tsv", ".txt", ""):
        return parse_csv(data)
    if suffix in (".yml", ".yaml", ".zip"):
        return read_interchange(p).rows
    raise ImportProblem(
        f"Unsupported file type {suffix!r}: use .csv, .jsonl, Rasa .yml, "
        "or a folder / .zip of intent_name.txt files."
    )


def import_utterances(
    ctx: AppContext,
    project: str,
    rows: list[NewUtterance],
    *,
    create_project_if_missing: bool = True,
    create_missing_intents: bool = True,
    on_existing: str = "error",
    user_id: int | None = None,
) -> ImportResult:
    """Write validated rows into a (new or existing) project in one transaction."""
    from storage.errors import NotFoundError
    from storage.projects import ensure_writable, intents_by_name

    with ctx.db.session() as s:
        try:
            proj = get_project(s, project)
        except NotFoundError:
            if not create_project_if_missing:
                raise
            proj = create_project(s, project)
        ensure_writable(proj)
        before = set(intents_by_name(s, proj.id))
        inserted, updated = import_rows(
            s,
            proj.id,
            rows,
            user_id=user_id if user_id is not None else current_user_id(),
            create_missing_intents=create_missing_intents,
            on_existing=on_existing,
        )
        created = sorted(set(intents_by_name(s, proj.id)) - before)
        name = proj.name
    return ImportResult(name, inserted, updated, created)


def import_file(
    ctx: AppContext, project: str, path: str | Path, **kwargs: bool | str | int | None
) -> ImportResult:
    """Parse and import a CSV/JSONL/Rasa YAML file, or a folder or .zip of ``intent.txt`` files.
    Raises ImportProblem (nothing written) on bad input."""
    p = Path(path)
    notes: list[str] = []
    if p.is_dir() or p.suffix.lower() in (".yml", ".yaml", ".zip"):
        if p.is_file() and p.stat().st_size > MAX_FILE_BYTES:
            raise ImportProblem(
                f"The file is {p.stat().st_size / 2**20:.1f} MB; the limit is "
                f"{MAX_FILE_BYTES / 2**20:.0f} MB."
            )
        parsed = read_interchange(p)
        rows, notes = parsed.rows, list(parsed.notes)
    else:
        rows = parse_file(p)
    result = import_utterances(ctx, project, rows, **kwargs)  # type: ignore[arg-type]
    result.notes.extend(notes)
    return result


def export_rows(ctx: AppContext, project: str) -> list[NewUtterance]:
    with ctx.db.session() as s:
        proj = get_project(s, project)
        return [
            NewUtterance(u.text, u.labels, u.split, u.context) for u in list_utterances(s, proj.id)
        ]


def write_csv(rows: Iterable[NewUtterance]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["text", "labels", "split"])
    for r in rows:
        w.writerow([r.text, "|".join(r.labels), r.split])
    return buf.getvalue()


def write_jsonl(rows: Iterable[NewUtterance]) -> str:
    return "".join(
        json.dumps({"text": r.text, "labels": list(r.labels), "split": r.split}, ensure_ascii=False)
        + "\n"
        for r in rows
    )


def export_file(ctx: AppContext, project: str, path: str | Path) -> int:
    """Export a project by the path's suffix: .csv, .jsonl, Rasa .yml/.yaml, .zip of
    ``intent.txt`` files, or (no suffix) a folder of them. Returns the number of rows."""
    p = Path(path)
    rows = export_rows(ctx, project)
    suffix = p.suffix.lower()
    if suffix == "":
        write_intent_folder(rows, p)
        return len(rows)
    if suffix == ".zip":
        payload = write_intent_zip(rows)
    elif suffix in (".yml", ".yaml"):
        payload = dump_rasa_yaml(rows).encode("utf-8")
    elif suffix in (".jsonl", ".ndjson"):
        payload = write_jsonl(rows).encode("utf-8")
    else:
        payload = write_csv(rows).encode("utf-8")
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_bytes(payload)
    tmp.replace(p)
    return len(rows)
