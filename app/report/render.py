"""The stakeholder report: one self-contained HTML file that opens offline.

plotly.js is embedded inline exactly once (``include_plotlyjs=True`` on the first figure) and no
``<script src>``, stylesheet link or font is loaded from anywhere, so the file can be mailed and
opened without a network. Every piece of user text (project and intent names, utterances,
explanations) is HTML-escaped; hover labels inside figures are escaped by :mod:`app.plots`, and
the figure JSON escapes ``<`` as ``\\u003c``.

Pure function from a :class:`ReportData` (plain data) to a string: no database, no Gradio.

Example:
    >>> html_text = render_report(ReportData(project="demo", model_version="v1", dataset_hash="ab"))
    >>> html_text.startswith("<!DOCTYPE html>")
    True
"""

from __future__ import annotations

import datetime as dt
import html
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from app.plots import (
    MapData,
    confusion_heatmap,
    f1_bars,
    format_metrics,
    scatter_map,
    side_by_side,
    worst_pairs,
)

logger = logging.getLogger(__name__)

_PLOT_CONFIG = {"displaylogo": False, "responsive": True}
_EMPHASIS = re.compile(r"\*([^*\n]+)\*")
SPACE_KEYS = ("silhouette", "alignment", "uniformity")
# Which direction is better, for the arrow in the headline table.
LOWER_IS_BETTER = frozenset({"alignment", "uniformity", "loss", "error", "ece"})

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d232a;
background:#f6f7f9}
main{max-width:1200px;margin:0 auto;padding:24px}
h1{margin:0 0 4px;font-size:1.6rem}h2{margin:32px 0 8px;font-size:1.2rem}
.meta{color:#5a6470;font-size:.9rem}.meta code{background:#eceff3;padding:1px 4px;border-radius:3px}
section{background:#fff;border:1px solid #e1e5ea;border-radius:8px;padding:16px;margin:16px 0}
table{border-collapse:collapse;font-size:.92rem}
th,td{padding:4px 10px;border-bottom:1px solid #eceff3;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.better{color:#1a7f37}.worse{color:#c62828}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:12px}
.card{border:1px solid #e1e5ea;border-radius:8px;padding:12px;background:#fff}
.card .utt{font-weight:600;margin-bottom:6px}.card p{margin:6px 0}
.card ul{margin:4px 0;padding-left:18px;font-size:.88rem}
.badge{display:inline-block;font-size:.75rem;padding:1px 6px;border-radius:10px;margin-right:4px}
.ok{background:#dff3e4;color:#1a7f37}.bad{background:#fde2e1;color:#c62828}
.warn{background:#fff3cd;color:#7a5a00}
.sim{color:#5a6470;font-variant-numeric:tabular-nums}
footer{color:#8a939e;font-size:.8rem;margin:24px 0}
"""


@dataclass
class ReportData:
    """Everything the report shows, as plain data (the app and the CLI fill it in)."""

    project: str
    model_version: str
    dataset_hash: str
    baseline_name: str = "frozen encoder"
    # Headline metrics (accuracy, macro F1, ...) of the active model and of the frozen encoder.
    metrics: dict[str, float] = field(default_factory=dict)
    baseline_metrics: dict[str, float] = field(default_factory=dict)
    per_intent_f1: dict[str, float] = field(default_factory=dict)
    confusion_labels: list[str] = field(default_factory=list)
    confusion_matrix: np.ndarray | Sequence[Sequence[float]] | None = None
    # The before (frozen) / after (active) maps and their space metrics.
    map_before: MapData | None = None
    map_after: MapData | None = None
    space_before: dict[str, float] = field(default_factory=dict)
    space_after: dict[str, float] = field(default_factory=dict)
    # Evidence cards: ``Explanation.to_dict()`` of chosen example utterances.
    evidence: list[dict[str, Any]] = field(default_factory=list)
    generated_at: str = ""
    notes: str = ""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _rich(text: str) -> str:
    """Escape, then turn ``*intent*`` into ``<em>intent</em>`` (safe: applied after escaping)."""
    return _EMPHASIS.sub(r"<em>\1</em>", _e(text))


def _num(value: object, digits: int = 3) -> str:
    if value is None:
        return "—"
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return _e(value)
    if math.isnan(f):
        return "—"
    return f"{f:.{digits}f}"


def _figure(fig: go.Figure, div_id: str, first: list[bool]) -> str:
    include = first[0]
    first[0] = False
    return str(
        fig.to_html(
            full_html=False,
            include_plotlyjs=include,
            include_mathjax=False,
            div_id=div_id,
            config=_PLOT_CONFIG,
            default_height="auto" if fig.layout.height else "520px",
        )
    )


def _headline(data: ReportData) -> str:
    keys = list(dict.fromkeys([*data.baseline_metrics, *data.metrics]))
    space_keys = [k for k in SPACE_KEYS if k in data.space_before or k in data.space_after]
    rows = []
    for key, before_src, after_src in [
        *((k, data.baseline_metrics, data.metrics) for k in keys),
        *((k, data.space_before, data.space_after) for k in space_keys),
    ]:
        before, after = before_src.get(key), after_src.get(key)
        delta, cls = "—", ""
        if before is not None and after is not None and np.isfinite([before, after]).all():
            d = float(after) - float(before)
            delta = f"{d:+.3f}"
            good = d < 0 if key in LOWER_IS_BETTER else d > 0
            cls = "better" if good and d != 0 else ("worse" if d != 0 else "")
        rows.append(
            f"<tr><td>{_e(key)}</td><td class='num'>{_num(before)}</td>"
            f"<td class='num'>{_num(after)}</td><td class='num {cls}'>{delta}</td></tr>"
        )
    if not rows:
        return "<p>No metrics recorded for this model version.</p>"
    return (
        "<table><thead><tr><th>metric</th>"
        f"<th>{_e(data.baseline_name)}</th><th>{_e(data.model_version)}</th><th>change</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _neighbour(ev: Mapping[str, Any] | None) -> str:
    if not ev:
        return "—"
    intents = ", ".join(str(x) for x in ev.get("labels", []))
    return (
        f"'{_e(ev.get('text', ''))}' <span class='sim'>({_num(ev.get('similarity'), 2)}"
        f"{', ' + _e(intents) if intents else ''})</span>"
    )


def evidence_card(ex: Mapping[str, Any]) -> str:
    """One evidence card (HTML) from an ``Explanation.to_dict()``; all text escaped.

    Example:
        >>> "&lt;b&gt;" in evidence_card({"text": "<b>", "sentence": "x"})
        True
    """
    badges = []
    if ex.get("correct") is True:
        badges.append("<span class='badge ok'>correct</span>")
    elif ex.get("correct") is False:
        gold = ", ".join(str(g) for g in ex.get("gold", []))
        badges.append(f"<span class='badge bad'>wrong (gold: {_e(gold)})</span>")
    if ex.get("ambiguous"):
        badges.append("<span class='badge warn'>close call</span>")
    if ex.get("borderline"):
        badges.append("<span class='badge warn'>borderline</span>")
    neighbours = "".join(f"<li>{_neighbour(n)}</li>" for n in ex.get("neighbours", []) or [])
    parts = [
        "<div class='card'>",
        f"<div class='utt'>“{_e(ex.get('text', ''))}”</div>",
        "".join(badges),
        f"<p>{_rich(str(ex.get('sentence', '')))}</p>",
        f"<p class='sim'>score {_num(ex.get('score'), 2)} · margin {_num(ex.get('margin'), 2)}</p>",
    ]
    if ex.get("runner_up"):
        parts.append(
            f"<p>Runner-up <em>{_e(ex['runner_up'])}</em>: "
            f"{_neighbour(ex.get('runner_up_neighbour'))}</p>"
        )
    if ex.get("borderline_reason"):
        parts.append(f"<p>{_rich(str(ex['borderline_reason']))}</p>")
    if neighbours:
        parts.append(f"<p>Nearest labelled examples:</p><ul>{neighbours}</ul>")
    parts.append("</div>")
    return "".join(parts)


def render_report(data: ReportData) -> str:
    """Render the stakeholder report as one self-contained HTML document.

    Args:
        data: what to show; empty parts are left out with a short note.

    Returns:
        The HTML text (a few MB: plotly.js is inline).

    Example:
        >>> r = render_report(ReportData("demo", "v2", "3f2a", per_intent_f1={"a": 0.9}))
        >>> "<script src=" in r
        False
    """
    generated = data.generated_at or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    first = [True]
    body: list[str] = [
        f"<h1>{_e(data.project)} — intent model report</h1>",
        "<div class='meta'>",
        f"Model version <code>{_e(data.model_version)}</code> · ",
        f"dataset <code>{_e(data.dataset_hash)}</code> · ",
        f"compared with the {_e(data.baseline_name)} · generated {_e(generated)}",
        "</div>",
    ]
    if data.notes:
        body.append(f"<p>{_rich(data.notes)}</p>")
    body.append(f"<section><h2>Headline metrics</h2>{_headline(data)}</section>")

    if data.map_before is not None and data.map_after is not None:
        fig = side_by_side(
            data.map_before,
            data.map_after,
            (data.baseline_name, data.model_version),
            data.space_before,
            data.space_after,
        )
        fig.update_layout(height=560)
        body.append(
            "<section><h2>How the model arranges the utterances</h2>"
            "<p>Each dot is an utterance, coloured by its intent. Left: the "
            f"{_e(data.baseline_name)}; right: {_e(data.model_version)}. Tight, separate "
            "clusters mean the model tells the intents apart. Higher silhouette and lower "
            "alignment are better.</p>" + _figure(fig, "map", first) + "</section>"
        )
    elif data.map_after is not None:
        m = data.map_after
        line = format_metrics(data.space_after)
        fig = scatter_map(
            m.points, m.ids, m.texts, m.gold, m.predicted, m.splits, margins=m.margins
        )
        body.append(
            f"<section><h2>Map</h2><p>{_e(line)}</p>" + _figure(fig, "map", first) + "</section>"
        )

    if data.per_intent_f1:
        body.append(
            "<section><h2>Per-intent F1</h2>"
            + _figure(f1_bars(data.per_intent_f1), "f1", first)
            + "</section>"
        )

    if data.confusion_matrix is not None and data.confusion_labels:
        pairs = worst_pairs(data.confusion_labels, data.confusion_matrix, top=10)
        rows = "".join(
            f"<tr><td>{_e(g)}</td><td>{_e(p)}</td><td class='num'>{c}</td></tr>"
            for g, p, c in pairs
        )
        table = (
            "<table><thead><tr><th>gold</th><th>predicted as</th><th>count</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            if rows
            else "<p>No confusions.</p>"
        )
        heat = confusion_heatmap(data.confusion_labels, data.confusion_matrix)
        body.append(
            "<section><h2>Confusions</h2><h3>Most confused intent pairs</h3>"
            + table
            + _figure(heat, "confusion", first)
            + "</section>"
        )

    if data.evidence:
        cards = "".join(evidence_card(ex) for ex in data.evidence)
        body.append(
            "<section><h2>Why the model predicts what it predicts</h2>"
            "<p>Each prediction is decided by the most similar labelled examples (this is the "
            "decision rule itself, not an approximation). The runner-up shows the other side.</p>"
            f"<div class='cards'>{cards}</div></section>"
        )

    body.append("<footer>Made with Intent Studio. This file needs no network to open.</footer>")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(data.project)} — {_e(data.model_version)}</title>"
        f"<style>{_CSS}</style></head><body><main>{''.join(body)}</main></body></html>\n"
    )


def write_report(data: ReportData, path: str | Path) -> Path:
    """Render the report and write it to ``path`` (UTF-8); returns the path.

    Example:
        >>> write_report(ReportData("demo", "v1", "ab"), "/tmp/report.html")  # doctest: +SKIP
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(render_report(data), encoding="utf-8")
    tmp.replace(out)
    logger.info("wrote report %s", out)
    return out
