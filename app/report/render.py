"""The report's HTML: summary, evidence cards, then the details (metrics, confusions, per-intent
F1, maps). Interactive charts are plotly figures drawn by plotly.js's *basic* bundle (scatter and
bar, 1.2 MB minified, ``assets/plotly-basic.min.js``), inlined once before the first chart; the
static report has no script at all and draws the per-intent F1 as HTML bars."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

import assets
from app.plots import f1_bars, side_by_side, worst_pairs
from app.report.data import (
    GLOSSARY,
    SPACE_KEYS,
    ReportData,
    change,
    esc,
    metric_text,
    num,
    pct,
    rich,
)
from app.report.maps import lighten, sample_maps
from app.report.styles import CSS
from app.report.summary import summary_parts
from app.report.team import agreement_section

logger = logging.getLogger(__name__)

PLOTLY_JS = "plotly-basic.min.js"
_PLOT_CONFIG = {"displaylogo": False, "responsive": True}


def plotly_js() -> str:
    """The vendored plotly.js basic bundle (scatter, bar), as an inline ``<script>``."""
    source = assets.text(PLOTLY_JS)
    return f"<script charset='utf-8'>{source}</script>"


def _figure(fig: go.Figure, div_id: str, first: list[bool]) -> str:
    script = plotly_js() if first[0] else ""
    first[0] = False
    return script + str(
        fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            include_mathjax=False,
            div_id=div_id,
            config=_PLOT_CONFIG,
            default_height="auto" if fig.layout.height else "520px",
        )
    )


def _metrics_table(d: ReportData) -> str:
    rows: list[tuple[str, str, str, str, str, str]] = []
    seen: set[str] = set()
    sources = [(k, d.baseline_metrics, d.metrics) for k in dict.fromkeys([*d.metrics])]
    sources += [(k, d.space_before, d.space_after) for k in SPACE_KEYS]
    for key, before_src, after_src in sources:
        if key in seen or (key not in before_src and key not in after_src):
            continue
        seen.add(key)
        name, meaning = GLOSSARY.get(key, (key, ""))
        before, after = before_src.get(key), after_src.get(key)
        delta, cls = change(key, before, after)
        rows.append((name, meaning, metric_text(key, before), metric_text(key, after), delta, cls))
    if not rows:
        return "<p>No metrics recorded for this model version.</p>"
    both = not d.is_baseline  # the frozen encoder against itself: one column
    body = "".join(
        f"<tr><td>{esc(n)}</td>"
        + (f"<td class='num'>{b}</td>" if both else "")
        + f"<td class='num'>{a}</td>"
        + (f"<td class='num {c}'>{esc(dl)}</td>" if both else "")
        + f"<td class='what'>{esc(m)}</td></tr>"
        for n, m, b, a, dl, c in rows
    )
    head = (
        f"<th>{esc(d.baseline_name)} (before training)</th><th>{esc(d.model_version)}</th>"
        "<th>change</th>"
        if both
        else f"<th>{esc(d.model_version)}</th>"
    )
    return (
        f"<table><thead><tr><th>measure</th>{head}<th>what it means</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _counts(d: ReportData) -> str:
    items = [
        ("intents", d.n_intents or len(d.per_intent_f1)),
        ("labelled examples", d.n_examples),
        ("cross-validated examples" if d.cross_validated else "test questions", d.n_evaluated),
    ]
    parts = [f"{num(v)} {esc(k)}" for k, v in items if v]
    return f"<p class='meta'>{' · '.join(parts)}</p>" if parts else ""


def _neighbour(ev: Mapping[str, Any] | None) -> str:
    if not ev:
        return "—"
    intents = ", ".join(str(x) for x in ev.get("labels", []))
    return (
        f"“{esc(ev.get('text', ''))}” <span class='sim'>(similarity {num(ev.get('similarity'))}"
        f"{', ' + esc(intents) if intents else ''})</span>"
    )


def evidence_card(ex: Mapping[str, Any]) -> str:
    """One evidence card (HTML) from an ``Explanation.to_dict()``; all text escaped.

    Example:
        >>> "&lt;b&gt;" in evidence_card({"text": "<b>", "sentence": "x"})
        True
    """
    badges = []
    if ex.get("correct") is True:
        badges.append("<span class='badge ok'>right</span>")
    elif ex.get("correct") is False:
        gold = ", ".join(str(g) for g in ex.get("gold", []))
        badges.append(f"<span class='badge bad'>wrong (should be {esc(gold)})</span>")
    if ex.get("ambiguous"):
        badges.append("<span class='badge warn'>close call</span>")
    if ex.get("borderline"):
        badges.append("<span class='badge warn'>borderline</span>")
    neighbours = "".join(f"<li>{_neighbour(n)}</li>" for n in ex.get("neighbours", []) or [])
    parts = [
        "<div class='card'>",
        f"<div class='utt'>“{esc(ex.get('text', ''))}”</div>",
        "".join(badges),
        f"<p>{rich(str(ex.get('sentence', '')))}</p>",
    ]
    if ex.get("runner_up"):
        parts.append(
            f"<p>Runner-up <em>{esc(ex['runner_up'])}</em>: "
            f"{_neighbour(ex.get('runner_up_neighbour'))}</p>"
        )
    if ex.get("borderline_reason"):
        parts.append(f"<p>{rich(str(ex['borderline_reason']))}</p>")
    if neighbours:
        parts.append(f"<details><summary>Nearest labelled examples</summary><ul>{neighbours}</ul>")
        parts.append("</details>")
    parts.append(
        f"<p class='sim'>score {num(ex.get('score'))} · lead over the runner-up "
        f"{num(ex.get('margin'))}</p></div>"
    )
    return "".join(parts)


def _f1_html(d: ReportData) -> str:
    """Per-intent F1 as HTML bars, worst first (the static report's chart)."""
    rows = []
    for name, f1 in sorted(d.per_intent_f1.items(), key=lambda kv: (kv[1], kv[0])):
        before = d.baseline_per_intent_f1.get(name)
        was = f"<span class='sim'>was {pct(before)}</span>" if before is not None else ""
        width = max(0.0, min(1.0, float(f1))) * 100
        rows.append(
            f"<tr><td>{esc(name)}</td><td class='barcell'><div class='bar' "
            f"style='width:{width:.1f}%'></div></td><td class='num'>{pct(f1)}</td>"
            f"<td>{was}</td></tr>"
        )
    return f"<table class='bars'><tbody>{''.join(rows)}</tbody></table>"


def _confusions(d: ReportData) -> str:
    if d.confusion_matrix is None or not d.confusion_labels:
        return ""
    pairs = worst_pairs(d.confusion_labels, d.confusion_matrix, top=10)
    totals = dict(zip(d.confusion_labels, np.asarray(d.confusion_matrix).sum(axis=1), strict=True))
    rows = "".join(
        f"<tr><td>{esc(g)}</td><td>{esc(p)}</td><td class='num'>{c} of {num(totals[g])}</td></tr>"
        for g, p, c in pairs
    )
    table = (
        "<table><thead><tr><th>should be</th><th>taken for</th><th>questions</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if rows
        else "<p>No confusions.</p>"
    )
    return f"<section><h2>Most confused intents</h2>{table}</section>"


def _details(d: ReportData, static: bool, first: list[bool]) -> list[str]:
    out = [
        "<section><h2>Details</h2>",
        _counts(d),
        _metrics_table(d),
        "</section>",
        _confusions(d),
    ]
    if d.per_intent_f1:
        chart = _f1_html(d) if static else _figure(f1_bars(d.per_intent_f1), "f1", first)
        out.append(
            "<section><h2>Per-intent F1, worst first</h2><p class='meta'>F1: 100 % = every "
            "question of the intent found and none taken for it by mistake.</p>"
            f"{chart}</section>"
        )
    if d.map_before is not None and d.map_after is not None and not static:
        before, after = sample_maps(d.map_before, d.map_after)
        fig = side_by_side(
            before,
            after,
            (d.baseline_name, d.model_version),
            d.space_before,
            d.space_after,
            webgl=False,
        )
        fig.update_layout(height=560)
        lighten(fig)
        shown = len(before.ids)
        of = (
            f" ({shown:,} of {len(d.map_before.ids):,} shown)"
            if shown < len(d.map_before.ids)
            else ""
        )
        out.append(
            "<section><h2>How the model arranges the utterances</h2>"
            f"<p>Each dot is an utterance{of}, coloured by its intent; hover to read it. Left: "
            f"the {esc(d.baseline_name)}; right: {esc(d.model_version)}. Tight, separate "
            "clusters mean the model tells the intents apart.</p>"
            + _figure(fig, "map", first)
            + "</section>"
        )
    return out


def render_report(data: ReportData, *, static: bool = False) -> str:
    """Render the stakeholder report as one self-contained HTML document.

    Args:
        data: what to show; empty parts are left out with a short note.
        static: no script: per-intent F1 as HTML bars, no maps (prints well, opens anywhere).

    Returns:
        The HTML text (about 1.5 MB with charts: plotly.js basic is inline; static: a few kB).

    Example:
        >>> r = render_report(ReportData("demo", "v2", "3f2a", per_intent_f1={"a": 0.9}))
        >>> "<script src=" in r, "<script" in render_report(ReportData("d", "v", "h"), static=True)
        (False, False)
    """
    d = data
    generated = d.generated_at or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    first = [True]
    lead, lists = summary_parts(d)
    summary = f"<p class='lead'>{' '.join(rich(s) for s in lead)}</p>" + "".join(
        f"<p>{rich(s)}</p>" for s in lists
    )
    body: list[str] = [
        f"<h1>{esc(d.project)}: how well the intent model works</h1>",
        f"<p class='meta'>Model version <code>{esc(d.model_version)}</code>"
        + (f" ({esc(d.version_note)})" if d.version_note else "")
        + f" · {esc(generated)}</p>",
        f"<section class='summary'>{summary}",
        f"<p class='meta'>{rich(d.notes)}</p>" if d.notes else "",
        "</section>",
    ]
    if d.evidence:
        cards = "".join(evidence_card(ex) for ex in d.evidence)
        body.append(
            "<section><h2>Examples: why the model answers what it does</h2>"
            "<p class='meta'>Each answer is decided by the most similar labelled examples (this "
            "is the decision rule itself, not an approximation); the runner-up shows the other "
            f"side.</p><div class='cards'>{cards}</div></section>"
        )
    body.append(agreement_section(d.team))
    body += _details(d, static, first)
    body.append(
        "<footer>Model version <code>"
        f"{esc(d.model_version)}</code> · data snapshot <code>{esc(d.dataset_hash)}</code> · "
        f"compared with the {esc(d.baseline_name)} · generated {esc(generated)}. "
        "Made with Intent Studio; this file needs no network to open.</footer>"
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(d.project)} — {esc(d.model_version)}</title>"
        f"<style>{CSS}</style></head><body><main>{''.join(body)}</main></body></html>\n"
    )


def write_report(data: ReportData, path: str | Path, *, static: bool = False) -> Path:
    """Render the report and write it to ``path`` (UTF-8, temp file + rename); returns the path.

    Example:
        >>> write_report(ReportData("demo", "v1", "ab"), "/tmp/report.html")  # doctest: +SKIP
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(render_report(data, static=static), encoding="utf-8")
    tmp.replace(out)
    logger.info("wrote report %s", out)
    return out
