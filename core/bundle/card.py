"""The model card: the bundle's ``README.md``, generated from its manifest. It says how to run the
bundle without the app (``predict.py``) and with it, and the decision rule in words, with this
bundle's own numbers (the constants are :mod:`core.portable`'s, the ones the rule uses)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.bundle.card_metrics import fmt as _fmt
from core.bundle.card_metrics import metrics_section
from core.bundle.layout import PREDICT_PY
from core.portable import DEPTH, EXACT, MULTI_LABEL_KNN_THRESHOLD, NEAREST_PROTOTYPE


def model_card(manifest: Mapping[str, Any]) -> str:
    """The bundle's ``README.md``: what it predicts, how to run it, how it decides, its metrics
    and intents.

    Example:
        >>> card = model_card({"project": "demo", "intents": {"greet": 3}})
        >>> "## Intents" in card and "## How it decides" in card
        True
    """
    project = manifest.get("project") or "an Intent Studio project"
    version = manifest.get("model_version")
    title = f"# Intent model: {project}" + (f" (version {version})" if version is not None else "")
    intents: Mapping[str, int] = manifest.get("intents", {})
    kind = manifest.get("encoder_kind", "base")
    onnx = manifest.get("onnx") if isinstance(manifest.get("onnx"), Mapping) else None
    base = manifest.get("base_encoder")
    encoder = {
        "base": f"the frozen base encoder `{base}`",
        "full": f"a fully tuned encoder (from `{base}`)",
        "adapter": f"an adapter over the base encoder `{base}`",
        "onnx": f"a tuned encoder (from `{base}`), carried as int8 ONNX only",
    }.get(str(kind), str(kind))
    lines = [
        title,
        "",
        f"Predicts the intent of a user utterance among {len(intents)} intents"
        + (" (multi-label: several intents may apply)" if manifest.get("multi_label") else "")
        + f" from {manifest.get('n_exemplars', sum(intents.values()))} labelled examples, in the "
        f"space of {encoder}. Method: `{manifest.get('method') or 'n/a'}`. Every prediction is "
        "explained by the labelled examples closest to it.",
        "",
        f"Created {manifest.get('created_at', '')}; dataset hash `{manifest.get('dataset_hash') or 'n/a'}`.",
        "",
        *_run(onnx),
        *_rule(manifest),
    ]
    lines += metrics_section(manifest.get("metrics") or {}, manifest.get("base_metrics") or {})
    if onnx is not None and onnx.get("precision", "int8") == "int8":
        lines += [
            "## Compact encoder",
            "",
            f"The encoder is int8 ONNX (`{onnx.get('folder', 'onnx')}/`); its top-1 agreement "
            f"with the fp32 model was {_fmt(onnx.get('parity_top1'))} on "
            f"{onnx.get('parity_n', '?')} texts. "
            + (
                "The fp32 weights are not in this bundle: Intent Studio predicts with it, but "
                "cannot open it as a project (export the version without int8 for that)."
                if kind == "onnx"
                else "Intent Studio uses it with `load(path, prefer_onnx=True)`."
            ),
            "",
        ]
    lines += ["## Intents", "", "| intent | examples |", "| --- | --- |"]
    lines += [f"| {name} | {count} |" for name, count in sorted(intents.items())]
    lines.append("")
    return "\n".join(lines)


def _run(onnx: Mapping[str, Any] | None) -> list[str]:
    """How to run it: without the app (when it carries an ONNX encoder), and with it."""
    lines = ["## How to run it", ""]
    if onnx is not None:
        lines += [
            f"Without Intent Studio: `{PREDICT_PY}` needs only onnxruntime, tokenizers and numpy.",
            "",
            "```sh",
            "pip install onnxruntime tokenizers numpy",
            "unzip bundle.zip -d bundle",
            f'python bundle/{PREDICT_PY} "I lost my card" "what is the weather like"',
            "```",
            "",
            "prints each text's decision: its intent, or `no intent (out of scope)`. `--json` "
            "prints one JSON object per text, the app's `/predict` answer. From Python:",
            "",
            "```python",
            "import sys; sys.path.insert(0, 'bundle')",
            "from predict import Bundle",
            "row = Bundle('bundle').predict(['I lost my card'])[0]",
            "print(row['labels'] or 'out of scope')",
            "```",
            "",
        ]
    lines += [
        'With Intent Studio: `intent-studio predict --bundle bundle.zip "I lost my card"`, or',
        "",
        "```python",
        "from core.bundle import load",
        'predictor = load("bundle.zip")',
        "print(predictor.predict(['I lost my card'])[0]['labels'] or 'out of scope')",
        "```",
        "",
        "`labels` is the decision; `top` is only the best-ranked intent, there even when the "
        "answer is *no intent* (`oos` true): printing `top` answers out-of-scope questions with "
        "an intent.",
        "",
    ]
    return lines


def _rule(manifest: Mapping[str, Any]) -> list[str]:
    """The decision rule in words, with this bundle's settings."""
    k = int(manifest.get("k") or 1)
    nearest = "its nearest example's cosine" if k == 1 else f"the mean cosine of its {k} nearest"
    anchors = manifest.get("anchors") if isinstance(manifest.get("anchors"), Mapping) else {}
    weight = float(anchors.get("weight") or 0.0) if anchors else 0.0
    if (manifest.get("rule") or "nearest") == NEAREST_PROTOTYPE:
        score = (
            f"the mean of {nearest} and the cosine to its prototype. The prototype is the unit "
            "mean of its examples' vectors"
            + (
                f", with its anchor (its description, or else its name in words) counted as "
                f"{weight:g} example{'' if weight == 1 else 's'}"
                if weight
                else ""
            )
            + f". A text at least {EXACT} similar to an example is that example: that cosine "
            "alone counts"
        )
    else:
        score = f"{nearest} (rule `nearest`: no prototype)"
    return [
        "## How it decides",
        "",
        "1. The text is encoded to a unit vector (the same encoder as the stored examples).",
        f"2. Each intent is scored from the {DEPTH} labelled examples most similar to the text: "
        f"{score}. An intent with no example among those {DEPTH} is not ranked"
        + ("; an intent without any example is scored by its anchor alone." if weight else "."),
        "3. The intents are ranked by score, ties by name; the margin is the top score minus "
        "the runner-up's.",
        "4. " + _decision(manifest),
        "",
    ]


def _decision(manifest: Mapping[str, Any]) -> str:
    thresholds: Mapping[str, float] = manifest.get("thresholds") or {}
    default = thresholds.get("default")
    own = len([n for n in thresholds if n != "default"])
    if manifest.get("multi_label"):
        if "head/head.safetensors" in (manifest.get("files") or {}):
            return (
                "A multi-label head (an MLP over the text's vector, `head/`) decides: every "
                "intent whose probability reaches its threshold; none: out of scope."
            )
        level = _fmt(default) if default is not None else str(MULTI_LABEL_KNN_THRESHOLD)
        return (
            f"Every intent whose score reaches its threshold ({level}"
            + (f"; {own} intent(s) have their own" if own else "")
            + ") is taken; none: out of scope."
        )
    if default is None and not own:
        return "The top intent is the answer (no out-of-scope threshold)."
    return (
        "The top intent is the answer when its score reaches its out-of-scope threshold ("
        + (f"{_fmt(default)}" if default is not None else "none by default")
        + (f"; {own} intent(s) have their own" if own else "")
        + "); below it the answer is *no intent*: `labels` is empty and `oos` true. A top intent "
        "scored by its anchor alone (no examples yet) is taken."
    )
