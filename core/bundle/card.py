"""The model card: the bundle's ``README.md``, generated from its manifest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.bundle.layout import ONNX_MODEL


def model_card(manifest: Mapping[str, Any]) -> str:
    """The bundle's ``README.md``: what it predicts, intents with counts, metrics, how to load it.

    Example:
        >>> "## Intents" in model_card({"project": "demo", "intents": {"greet": 3}})
        True
    """
    project = manifest.get("project") or "an Intent Studio project"
    version = manifest.get("model_version")
    title = f"# Intent model: {project}" + (f" (version {version})" if version is not None else "")
    intents: Mapping[str, int] = manifest.get("intents", {})
    kind = manifest.get("encoder_kind", "base")
    encoder = {
        "base": f"the frozen base encoder `{manifest.get('base_encoder')}` (no weights inside)",
        "full": f"a fully tuned encoder (from `{manifest.get('base_encoder')}`), safetensors",
        "adapter": f"an adapter over the base encoder `{manifest.get('base_encoder')}`",
    }.get(str(kind), str(kind))
    lines = [
        title,
        "",
        f"Predicts the intent of a user utterance among {len(intents)} intents"
        + (" (multi-label: several intents may apply)" if manifest.get("multi_label") else "")
        + f", by k-nearest neighbours (k={manifest.get('k', 1)}) over "
        f"{manifest.get('n_exemplars', sum(intents.values()))} labelled examples, in the space of "
        f"{encoder}. Method: `{manifest.get('method') or 'n/a'}`. Every prediction is explained by "
        "the labelled examples closest to it.",
        "",
        f"Created {manifest.get('created_at', '')}; dataset hash `{manifest.get('dataset_hash') or 'n/a'}`.",
        "",
        "## How to load it",
        "",
        "```python",
        "from core.bundle import load",
        'predictor = load("bundle.zip")',
        'print(predictor.predict(["I lost my card"])[0]["top"])',
        "```",
        "",
        'Or from a shell: `intent-studio predict --bundle bundle.zip "I lost my card"`.',
        "",
    ]
    metrics: Mapping[str, Any] = manifest.get("metrics") or {}
    base: Mapping[str, Any] = manifest.get("base_metrics") or {}
    if metrics:
        lines += ["## Metrics", "", "| metric | this model | frozen base |", "| --- | --- | --- |"]
        for key, value in metrics.items():
            lines.append(f"| {key} | {_fmt(value)} | {_fmt(base.get(key))} |")
        lines.append("")
    onnx = manifest.get("onnx")
    if isinstance(onnx, Mapping):
        lines += [
            "## Compact encoder",
            "",
            f"An int8 ONNX encoder is included (`{ONNX_MODEL}`); its top-1 agreement with the fp32 "
            f"model was {_fmt(onnx.get('parity_top1'))} on {onnx.get('parity_n', '?')} texts. "
            "Use it with `load(path, prefer_onnx=True)`.",
            "",
        ]
    lines += ["## Intents", "", "| intent | examples |", "| --- | --- |"]
    lines += [f"| {name} | {count} |" for name, count in sorted(intents.items())]
    lines.append("")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "–" if value is None else str(value)
