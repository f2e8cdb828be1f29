"""Issue 43, hole 4, on import: a label that is a project's intent (or an earlier label of the
file) written another way (case, full width, an invisible character, separators, look-alike
letters) was a new intent through CSV, JSONL, Rasa, intent files and every agent format. It is
mapped onto that intent, and the import's message says so; an alias of ``out_of_scope`` is
``out_of_scope``."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from app.services.projects.export import export_project
from app.services.projects.io import destination, import_file
from core.retrieval.scope import OUT_OF_SCOPE
from storage.names import OUT_OF_SCOPE as STORED_OUT_OF_SCOPE
from storage.projects import create_intent, create_project, get_project, list_intents
from storage.utterances import add_utterance, list_utterances
from tests.app.formats.agents import BUILDERS, EXPECTED, watson
from tests.handles import live

WIDE = "\uff27\uff52\uff45\uff45\uff54"  # Ｇｒｅｅｔ
# text -> its label in the file; what each is mapped to is in MAPPED
LABELS = {
    "hi there": "Greet",
    "hello you": WIDE,
    "hey hi": "greet\ufe00",
    "what is the weather": "OUT-OF-SCOPE",
    "tell me a joke": "Out Of Scope",
    "bye now": "Bye",
    "see you": "BYE",
}
MAPPED = {
    "Greet": "greet",
    WIDE: "greet",
    "greet\ufe00": "greet",
    "OUT-OF-SCOPE": OUT_OF_SCOPE,
    "Out Of Scope": OUT_OF_SCOPE,
    "BYE": "Bye",
}


def _project(serving_state, *intents: str) -> None:
    with serving_state.db.write() as s:
        pid = create_project(s, "p").id
        add_utterance(s, pid, "good morning", ["greet"])
        for name in intents:
            create_intent(s, pid, name)


def _state(serving_state) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    with serving_state.db.session() as s:
        pid = get_project(s, "p").id
        names = [i.name for i in list_intents(s, pid)]
        return names, {r.text: r.labels for r in list_utterances(s, pid)}


def _csv() -> bytes:
    return ("text,label\n" + "".join(f"{t},{n}\n" for t, n in LABELS.items())).encode()


def _jsonl() -> bytes:
    return "\n".join(json.dumps({"text": t, "label": n}) for t, n in LABELS.items()).encode()


def _rasa() -> bytes:
    by: dict[str, list[str]] = {}
    for text, name in LABELS.items():
        by.setdefault(name, []).append(text)
    items = "".join(
        f"- intent: {json.dumps(n)}\n  examples: |\n" + "".join(f"    - {t}\n" for t in ts)
        for n, ts in by.items()
    )
    return f'version: "3.1"\nnlu:\n{items}'.encode()


def _intent_zip() -> bytes:
    by: dict[str, list[str]] = {}
    for text, name in LABELS.items():
        by.setdefault(name, []).append(text)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, texts in by.items():
            zf.writestr(f"{name}.txt", "\n".join(texts))
    return buf.getvalue()


FILES = {".csv": _csv, ".jsonl": _jsonl, ".yml": _rasa, ".zip": _intent_zip}


def test_the_reserved_label_is_one_name_in_storage_and_core():
    assert STORED_OUT_OF_SCOPE == OUT_OF_SCOPE


@pytest.mark.parametrize("suffix", FILES)
def test_a_label_written_another_way_is_mapped_onto_the_intent_and_said(
    serving_state, tmp_path, suffix
):
    _project(serving_state)
    path = tmp_path / f"in{suffix}"
    path.write_bytes(FILES[suffix]())
    result = import_file(serving_state.db, destination(serving_state.db, "p"), path)
    mapped = dict(MAPPED)
    if suffix == ".zip":  # intent files are read in the order of their names: BYE.txt first
        del mapped["BYE"]
        mapped["Bye"] = "BYE"
    first = "BYE" if suffix == ".zip" else "Bye"
    names, labels = _state(serving_state)
    assert names == [first, "greet", OUT_OF_SCOPE]
    assert {t: labels[t] for t in LABELS} == {t: (mapped.get(n, n),) for t, n in LABELS.items()}
    message = result.message()
    assert f"Mapped {len(mapped)} intent name(s) onto the intent they name" in message
    for written, stored in mapped.items():
        assert f"{written!r} → {stored!r}" in message, message
    assert sorted(result.intents_created) == [first, OUT_OF_SCOPE]


def test_an_invisible_character_in_a_new_name_refuses_the_import_naming_the_label(
    serving_state, tmp_path
):
    _project(serving_state)
    path = tmp_path / "in.csv"
    path.write_bytes("text,label\nhi there,greet\nbye now,bye\u200b\n".encode())
    with pytest.raises(ValueError, match=r"The label 'bye\\u200b' is no intent of this project"):
        import_file(serving_state.db, destination(serving_state.db, "p"), path)
    assert _state(serving_state)[0] == ["greet"]


@pytest.mark.parametrize("fmt", BUILDERS)
def test_every_agent_format_maps_its_intents_onto_the_projects_written_another_way(
    serving_state, tmp_path, fmt
):
    ours = sorted({n for r in EXPECTED[fmt] for n in r.labels if n != OUT_OF_SCOPE})
    _project(serving_state, *(n.upper() for n in ours))
    suffix, data = BUILDERS[fmt]()
    path = tmp_path / f"agent{suffix}"
    path.write_bytes(data)
    message = import_file(serving_state.db, destination(serving_state.db, "p"), path).message()
    names, labels = _state(serving_state)
    assert set(names) - {OUT_OF_SCOPE} == {"greet", *(n.upper() for n in ours)}
    for row in EXPECTED[fmt]:
        assert labels[row.text] == tuple(
            sorted(n if n == OUT_OF_SCOPE else n.upper() for n in row.labels)
        )
    for name in ours:
        assert f"{name!r} → {name.upper()!r}" in message, message


def test_an_agent_mapped_onto_the_projects_names_exports_into_its_own_intents(
    serving_state, tmp_path
):
    _project(serving_state, "CARD_LOST", "Balance")
    _, data = watson()
    src = tmp_path / "skill.json"
    src.write_bytes(data)
    import_file(serving_state.db, destination(serving_state.db, "p"), src)
    out = tmp_path / "out.json"
    notes = export_project(serving_state.db, live(serving_state, "p"), out).notes
    after, before = json.loads(out.read_text()), json.loads(data)
    assert [i["intent"] for i in after["intents"]][:2] == ["card_lost", "balance"]
    assert after["intents"][:2] == before["intents"][:2]  # the same phrases, under its names
    assert not any("deleted in the project" in n for n in notes), notes
