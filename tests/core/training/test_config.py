from __future__ import annotations

import dataclasses
import json

import pytest

from core.training import TrainConfig

pytestmark = pytest.mark.fast


def test_defaults_are_convfit_stage_2() -> None:
    cfg = TrainConfig()
    assert cfg.method == "convfit" and cfg.epochs == 4 and cfg.resolved_lr == 1e-4
    assert cfg.batch_size == 32 and cfg.max_length == 48 and cfg.resolved_freeze_layers == 3
    assert TrainConfig(method="lora").resolved_lr == 1e-3


def test_fast_is_convfits_older_name_and_reads_as_it() -> None:
    """Issue 55: the default was called ``fast``; requests, scripts and stored configs that say so
    get ConvFiT Stage 2, recorded under its name."""
    assert TrainConfig(method="fast") == TrainConfig()
    assert TrainConfig(method="fast", epochs=2).to_dict()["method"] == "convfit"
    stored = {**TrainConfig(epochs=2).to_dict(), "method": "fast"}  # a version trained as fast
    assert TrainConfig.from_dict(stored) == TrainConfig(epochs=2)
    assert TrainConfig.from_dict(stored).resolved_freeze_layers == 3


def test_json_round_trip() -> None:
    cfg = TrainConfig(method="lora", epochs=2, lora_r=4, freeze_layers=1)
    data = json.loads(json.dumps(cfg.to_dict()))
    assert TrainConfig.from_dict(data) == cfg


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"method": "magic"},
            r"Unknown method 'magic': use convfit \(ConvFiT Stage 2, the default",
        ),
        ({"method": ["fast"]}, r"Unknown method \['fast'\]: use convfit"),
        ({"epochs": 0}, "epochs must be between 1 and 100"),
        ({"batch_size": 1}, "batch_size must be between 2"),
        ({"batch_size": 2.5}, "batch_size must be an integer"),
        ({"lr": -1.0}, "lr must be in"),
        ({"warmup": 1.0}, r"warmup must be in \[0.0, 1.0\)"),
        ({"max_length": 2}, "max_length must be between 4"),
        ({"lora_r": 0}, "lora_r must be between 1 and 256"),
        ({"seed": True}, "seed must be an integer"),
    ],
)
def test_invalid_values_raise_clear_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_from_dict_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match="Unknown TrainConfig keys: bogus"):
        TrainConfig.from_dict({"bogus": 1})


def test_a_stored_config_with_a_retired_option_off_reads_and_one_turned_on_is_refused() -> None:
    stored = {**TrainConfig(epochs=2).to_dict(), "label_encoder": "shared"}
    # as every earlier version recorded them
    stored.update(
        method="fast",
        epochs=None,
        fast_passes=2,
        loss=None,
        margin=0.5,
        negatives=3,
        max_pairs=20000,
        lora_alpha=16,
        lora_dropout=0.1,
        lora_targets=["query", "value"],
        label_layers=None,
        anchor_pairs=False,
        projection_dim=None,
        interpolate=1.0,
        self_train=0,
        template_fill=0,
        template_loss=0.0,
        distil_weight=0.0,
        distil_batch=32,
        distil_loss="kl",
        distil_temperature=0.05,
        stage1=False,
        stage1_epochs=2,
        stage1_batch_size=64,
        stage1_lr=2e-5,
        symmetric=True,
        pair_strategy="convfit",
    )
    assert TrainConfig.from_dict(stored) == TrainConfig(epochs=2)
    assert TrainConfig.from_dict({**stored, "epochs": 3}) == TrainConfig(epochs=3)  # it won
    assert TrainConfig.from_dict({**stored, "loss": "mnrl", "max_pairs": None}).epochs == 2
    # ConvFiT's sampled pairs: a config written before they left names convfit with loss None
    # (OCL); today's convfit is the in-batch loss, so that config is refused, not retrained
    with pytest.raises(
        ValueError, match=r"method='convfit' with loss=None \(ConvFiT on sampled pairs.*-2\.6"
    ):
        TrainConfig.from_dict({**stored, "method": "convfit"})
    assert TrainConfig.from_dict({**stored, "method": "fast"}) == TrainConfig(epochs=2)
    with pytest.raises(ValueError, match=r"loss='ocl' is no longer an option: .*only loss"):
        TrainConfig.from_dict({**stored, "loss": "ocl"})
    for name, value in (("lora_alpha", 32), ("lora_dropout", 0.0), ("lora_targets", ["query"])):
        with pytest.raises(ValueError, match=f"{name}=.* is no longer an option: .*fixed"):
            TrainConfig.from_dict({**stored, name: value})
    assert TrainConfig.from_dict({**stored, "lora_targets": ["query", "value"]}).epochs == 2
    for name, value in (("margin", 0.3), ("negatives", 1), ("max_pairs", 40)):
        with pytest.raises(ValueError, match=f"{name}={value} is no longer an option: .*ConvFiT"):
            TrainConfig.from_dict({**stored, name: value})
    with pytest.raises(ValueError, match=r"symmetric=False is no longer an option: .*tied"):
        TrainConfig.from_dict({**stored, "symmetric": False})
    with pytest.raises(ValueError, match=r"pair_strategy='all' is no longer an option: .*lost"):
        TrainConfig.from_dict({**stored, "pair_strategy": "all"})
    with pytest.raises(ValueError, match=r"anchor_pairs=True is no longer an option: .*tied"):
        TrainConfig.from_dict({**stored, "anchor_pairs": True})
    with pytest.raises(ValueError, match=r"projection_dim=128 is no longer an option: .*lost"):
        TrainConfig.from_dict({**stored, "projection_dim": 128})
    with pytest.raises(ValueError, match=r"interpolate=0.5 is no longer an option: .*lost"):
        TrainConfig.from_dict({**stored, "interpolate": 0.5})
    with pytest.raises(
        ValueError, match=r"label_encoder='separate' is no longer an option: .*lost"
    ):
        TrainConfig.from_dict({**stored, "label_encoder": "separate"})
    with pytest.raises(ValueError, match=r"self_train=50 is no longer an option: .*tied"):
        TrainConfig.from_dict({**stored, "self_train": 50})
    with pytest.raises(
        ValueError, match=r"template_fill=20 is no longer an option: .*86\.2 against 86\.6"
    ):
        TrainConfig.from_dict({**stored, "template_fill": 20})
    with pytest.raises(
        ValueError, match=r"template_loss=0\.5 is no longer an option: .*92\.3 against 92\.8"
    ):
        TrainConfig.from_dict({**stored, "template_loss": 0.5})
    with pytest.raises(
        ValueError, match=r"distil_weight=1\.0 is no longer an option: .*one seed of BANKING77"
    ):
        TrainConfig.from_dict({**stored, "distil_weight": 1.0})
    with pytest.raises(ValueError, match=r"distil_loss='mse' is no longer an option"):
        TrainConfig.from_dict({**stored, "distil_loss": "mse"})
    with pytest.raises(
        ValueError, match=r"stage1=True is no longer an option: .*never measured.*encodes context"
    ):
        TrainConfig.from_dict({**stored, "stage1": True})
    with pytest.raises(ValueError, match=r"stage1_lr=0\.0001 is no longer an option"):
        TrainConfig.from_dict({**stored, "stage1_lr": 1e-4})
    with pytest.raises(ValueError, match=r"label_layers=2 is no longer an option"):
        TrainConfig.from_dict({**stored, "label_layers": 2})
    assert TrainConfig.from_dict({"template_loss": 0}) == TrainConfig()  # 0 as an int reads too
    assert "label_encoder" not in TrainConfig().to_dict()  # never written again
    assert "template_fill" not in TrainConfig().to_dict()
    assert not [k for k in TrainConfig().to_dict() if k.startswith(("distil_", "stage1"))]
    with pytest.raises(TypeError):
        TrainConfig(label_encoder="separate")  # type: ignore[call-arg]


def test_the_fast_method_freezes_the_lowest_three_layers_and_lora_none_by_default() -> None:
    assert TrainConfig().resolved_freeze_layers == 3
    assert TrainConfig(method="lora").resolved_freeze_layers == 0
    assert TrainConfig(freeze_layers=0).resolved_freeze_layers == 0
    assert TrainConfig.from_dict(TrainConfig().to_dict()).freeze_layers is None


FLOAT_SETTINGS = [
    f.name for f in dataclasses.fields(TrainConfig) if f.type in ("float", "float | None")
]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("name", FLOAT_SETTINGS)
def test_a_non_finite_number_is_refused_for_every_float_setting(name, value) -> None:
    """Issue 27 row 12: lr=NaN and margin=NaN were queued, trained 264 s, then failed."""
    with pytest.raises(ValueError, match=f"{name} must be"):
        TrainConfig.from_dict({name: value})


def test_the_red_teams_retrain_settings_are_refused_before_queueing() -> None:
    assert {"lr", "scale"} <= set(FLOAT_SETTINGS)
    for bad in ({"lr": float("nan")}, {"scale": float("nan")}):
        with pytest.raises(ValueError, match="finite"):
            TrainConfig.from_dict(json.loads(json.dumps(bad)))  # NaN survives JSON in Python
