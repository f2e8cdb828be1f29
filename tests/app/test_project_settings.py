"""A project's settings are read and checked in one place (ProjectSettings): defaults for what is
not stored, a round trip through the stored JSON, and refusals for values out of range."""

from __future__ import annotations

import pytest

from app.project_settings import (
    KINDS,
    NAMES,
    TITLES,
    ProjectSettings,
    parse_setting,
)
from core.evaluation.oos import DEFAULT_TARGET_RECALL
from core.retrieval.anchors import DEFAULT_ANCHOR_WEIGHT


def test_nothing_stored_reads_as_the_defaults_everywhere():
    s = ProjectSettings.from_dict(None)
    assert s == ProjectSettings.from_dict({}) == ProjectSettings()
    assert s.oos_target_recall == DEFAULT_TARGET_RECALL
    assert s.anchor_weight == DEFAULT_ANCHOR_WEIGHT
    assert s.encode_context is False and s.serve_int8 is True
    assert s.oos_calibration == "auto"  # the device's default
    assert s.keep_versions == 3  # the retention rule's newest versions


def test_the_newest_versions_kept_are_a_number_from_1_to_1000():
    assert ProjectSettings().with_texts({"keep_versions": " 7 "}).keep_versions == 7
    for typed in ("0", "1001", "-1", "three", "2.5", "²"):
        with pytest.raises(ValueError, match=r"keep_versions is a number of versions from 1 to"):
            parse_setting("keep_versions", typed)
    with pytest.raises(ValueError, match="keep_versions is a number of versions"):
        ProjectSettings.from_dict({"keep_versions": True})


def test_stored_values_round_trip_and_other_keys_are_left_alone():
    stored = {"oos_target_recall": None, "anchor_weight": 2, "encode_context": True}
    stored["oos_calibration"] = "held-out"
    s = ProjectSettings.from_dict({**stored, "agent_format": "lex"})
    assert (s.oos_target_recall, s.anchor_weight, s.encode_context) == (None, 2.0, True)
    assert s.oos_calibration == "held-out"
    assert ProjectSettings.from_dict(s.to_dict()) == s
    assert set(s.to_dict()) == {
        "oos_target_recall",
        "anchor_weight",
        "encode_context",
        "serve_int8",
        "oos_calibration",
        "auto_retrain",
        "auto_retrain_after",
        "keep_versions",
    }


def test_a_setting_is_one_field_that_carries_its_check_its_words_and_its_title():
    """Adding a setting is one line on ProjectSettings: its kind reads what a person types and
    checks what is stored, and its title reaches the CLI and the Data tab (services.settings)."""
    from app.services.projects import settings as settings_svc

    assert NAMES == tuple(KINDS) == tuple(TITLES) == tuple(ProjectSettings().to_dict())
    assert (*NAMES, "base_encoder") == settings_svc.SETTINGS
    assert all(settings_svc.TITLES[name] == TITLES[name] for name in NAMES)
    for name, value in ProjectSettings().to_dict().items():
        assert parse_setting(name, value) == value  # a value of its own type passes, checked
    assert parse_setting("serve_int8", " OFF ") is False
    with pytest.raises(ValueError, match="serve_int8 is on or off"):
        parse_setting("serve_int8", 2)


@pytest.mark.parametrize(
    ("stored", "match"),
    [
        # a word where on/off is stored was read as on (bool("off")); now refused
        ({"encode_context": "off"}, "encode_context is on or off .*not 'off'"),
        ({"serve_int8": "no"}, "serve_int8 is on or off"),
        # a list or a text where a number is stored raised TypeError (a traceback); now a rule
        (
            {"anchor_weight": [1]},
            "An anchor weight is a number of examples, 0 or more; got \\[1\\]",
        ),
        ({"oos_target_recall": "high"}, "target in-scope recall is a number or off, not 'high'"),
        ({"anchor_weight": True}, "An anchor weight is a number"),
    ],
)
def test_a_stored_value_of_the_wrong_type_is_refused_with_its_rule(stored, match):
    with pytest.raises(ValueError, match=match):
        ProjectSettings.from_dict(stored)


def test_a_project_with_an_invalid_stored_setting_says_which_and_the_others_still_open(
    serving_state, demo, tmp_path, capsys
):
    """The settings are parsed once, where a request resolves its project: a stored value no
    setting takes (written by hand, or by an older version) is refused there, by name, on every
    door, and nothing crashes; another project is untouched."""
    from app.access import open_project
    from app.cli import main
    from app.services.projects.projects import new_project
    from storage.db import WriteLock
    from storage.projects import set_project_setting

    new_project(serving_state.db, "other")
    pid = demo.id
    with serving_state.db.write(WriteLock.project(pid)) as s:
        set_project_setting(s, pid, "anchor_weight", {"weight": 2})
    name = str(demo)
    with pytest.raises(
        ValueError, match=f"Project '{name}' has a stored setting that is not valid"
    ):
        open_project(serving_state.db, name)
    assert open_project(serving_state.db, "other").settings == ProjectSettings()
    d = ["--data-dir", str(serving_state.settings.data_dir)]
    assert main([*d, "settings", "--project", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: Project '{name}' has a stored setting that is not valid: An ")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("stored", "match"),
    [
        ({"oos_target_recall": 0.2}, "between 0.5 and 1"),
        ({"anchor_weight": -1}, "0 or more"),
        ({"anchor_weight": float("nan")}, "0 or more"),
        ({"oos_calibration": "slow"}, "auto, held-out, quick"),
    ],
)
def test_a_value_out_of_range_is_refused_with_its_rule(stored, match):
    with pytest.raises(ValueError, match=match):
        ProjectSettings.from_dict(stored)


def test_the_calibration_reads_as_people_write_it_and_refuses_anything_else():
    written = ["held out", "Held-Out", "held_out", " QUICK ", "auto"]
    assert [parse_setting("oos_calibration", w) for w in written] == [
        "held-out",
        "held-out",
        "held-out",
        "quick",
        "auto",
    ]
    with pytest.raises(ValueError, match="auto, held-out, quick, not 'fast'"):
        parse_setting("oos_calibration", "fast")


def test_one_command_shows_and_sets_every_setting_and_a_bad_value_changes_nothing(
    tmp_path, capsys, monkeypatch
):
    from app.cli import main

    monkeypatch.setenv("INTENT_STUDIO_AUTO_RETRAIN", "on")  # a deployment whose workers watch

    d = ["--data-dir", str(tmp_path / "data")]
    src = tmp_path / "rows.csv"
    src.write_text("text,label\nhello,greet\nbye,leave\n")
    assert main([*d, "import", str(src), "--project", "p"]) == 0
    capsys.readouterr()
    assert main([*d, "settings", "--project", "p"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0::2] == [
        "oos_target_recall = 0.95",
        "anchor_weight = 1",
        "encode_context = off",
        "serve_int8 = on",
        "oos_calibration = auto",
        "auto_retrain = on",
        "auto_retrain_after = 20",
        "keep_versions = 3",
        "base_encoder = minilm",
    ]
    # each followed by what it does in the project now
    assert shown[3].startswith("    Anchors on (weight 1): 2 intent(s)")
    assert (
        shown[5]
        == "    Context encoding is off: utterances are encoded alone. 0 utterance(s) carry a context."
    )
    assert shown[7] == "    Serving: the frozen minilm encoder (fp32)."
    # on this CPU the quick calibration, and what held-out would cost here
    assert shown[9].startswith(
        "    Auto: quick on this CPU (thresholds from the pool's own scores)."
    )
    assert "Held-out would take about 4x a retrain's training on this CPU" in shown[9]
    # what counts (net, weighted by what it can change) and the quiet spell (issue 71 item 2)
    assert shown[11].startswith("    On: once the changes since the last retrain weigh 20 ")
    assert "for 6 s" in shown[11] and "(20 of 20 since the last retrain)" in shown[11]
    assert shown[15].startswith("    The active version, the newest 3 and every version pinned")
    assert shown[17].startswith("    MiniLM (384-d) is the default on a CPU")
    sets = ["--set", "oos_target_recall=90%", "--set", "anchor_weight=off"]
    assert main([*d, "settings", "--project", "p", *sets, "--set", "encode_context=on"]) == 0
    assert capsys.readouterr().out.startswith(
        "Changed oos_target_recall 0.95 → 0.9; anchor_weight 1 → 0; encode_context off → on.\n"
    )
    assert main([*d, "settings", "--project", "p", "--format", "json"]) == 0
    import json

    shown_json = json.loads(capsys.readouterr().out)
    assert {k: shown_json[k] for k in NAMES} == {
        "oos_target_recall": 0.9,
        "anchor_weight": 0.0,
        "encode_context": True,
        "serve_int8": True,
        "oos_calibration": "auto",
        "auto_retrain": True,
        "auto_retrain_after": 20,
        "keep_versions": 3,
    }
    assert set(shown_json["effects"]) == {*NAMES, "base_encoder"}
    assert shown_json["base_encoder"] == "minilm"
    # one bad value among good ones: refused with its rule, nothing changed
    bad = ["--set", "serve_int8=off", "--set", "oos_target_recall=0.2"]
    assert main([*d, "settings", "--project", "p", *bad]) == 2
    assert "between 0.5 and 1" in capsys.readouterr().err
    assert main([*d, "settings", "--project", "p", "--set", "colour=blue"]) == 2
    assert "Unknown setting 'colour'" in capsys.readouterr().err
    assert main([*d, "settings", "--project", "p", "--set", "anchor_weight"]) == 2
    assert "name=value" in capsys.readouterr().err
    assert main([*d, "settings", "--project", "p", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["serve_int8"] is True
    # the automatic retrain switched off from the CLI, and its count of labels refused out of range
    assert main([*d, "settings", "--project", "p", "--set", "auto_retrain=off"]) == 0
    said = capsys.readouterr().out  # in words, not the internal key (issue 75 item 1)
    assert said.startswith("Retrain by itself after 20 new labels: off (was on)."), said
    assert main([*d, "settings", "--project", "p", "--set", "auto_retrain_after=0"]) == 2
    assert "from 1 to 100,000" in capsys.readouterr().err


# What a person may type that is no value of any setting: digits Python's int() does not take
# ("²", "½", "Ⅻ"), more digits than it converts, words, signs, nothing; and values of other types.
ODD_WORDS = ["²", "½", "Ⅻ", "1" * 5000, "0x10", "nan", "-", "1,5", "", "   ", "\x00", "🙂", "[]"]
ODD_VALUES = [True, [], {}, "x" * 3, 2**64, float("nan"), b"1"]
PYTHONS_WORDS = ("invalid literal", "base 10", "could not convert", "Exceeds the limit", "object")


def test_every_setting_refuses_what_it_does_not_take_in_the_apps_words():
    """Issue 73, item 10: ``settings --set auto_retrain_after=²`` printed Python's own error
    ("invalid literal for int() with base 10: '²'"). Every setting (each kind) says its rule."""
    defaults = ProjectSettings()
    said = []
    for name in NAMES:
        for odd in [*ODD_WORDS, *ODD_VALUES]:
            if (odd is True and isinstance(getattr(defaults, name), bool)) or (
                name == "anchor_weight" and odd == 2**64  # a number of examples: no upper bound
            ):
                continue  # a value of the setting's own type that it takes
            with pytest.raises(ValueError) as refused:
                parse_setting(name, odd)  # type: ignore[arg-type]
            said.append((name, odd, str(refused.value)))
    wrong = [s for s in said if any(w in s[2] for w in PYTHONS_WORDS) or not s[2].endswith(".")]
    assert wrong == []


def test_the_command_says_a_settings_rule_not_pythons_words(tmp_path, capsys):
    from app.cli import main

    d = ["--data-dir", str(tmp_path / "data")]
    src = tmp_path / "rows.csv"
    src.write_text("text,label\nhello,greet\nbye,leave\n")
    assert main([*d, "import", str(src), "--project", "p"]) == 0
    capsys.readouterr()
    assert main([*d, "settings", "--project", "p", "--set", "auto_retrain_after=²"]) == 2
    err = capsys.readouterr().err
    assert "auto_retrain_after is a number of labels from 1 to 100,000, not '²'." in err, err
    assert "invalid literal" not in err
