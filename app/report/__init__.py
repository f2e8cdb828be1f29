"""The stakeholder report: one self-contained HTML file that opens offline, written for a manager.

It leads with a plain-language summary built from the numbers (:mod:`app.report.summary`), then
example predictions with the labelled examples that decided them, then the details: a metrics
table (each measure explained in one line), the most confused intents, per-intent F1 and the
before/after maps.

plotly.js's basic bundle is embedded inline exactly once, before the first chart, and no
``<script src>``, stylesheet link or font is loaded from anywhere, so the file can be mailed and
opened without a network; ``static=True`` leaves every script out (F1 as HTML bars, no maps).
Every piece of user text (project and intent names, utterances, explanations) is HTML-escaped;
hover labels inside figures are escaped by :mod:`app.plots`, and the figure JSON escapes ``<``
as ``\\u003c``.

Pure functions from a :class:`ReportData` (plain data) to a string: no database, no Gradio.

Example:
    >>> html_text = render_report(ReportData(project="demo", model_version="v1", dataset_hash="ab"))
    >>> html_text.startswith("<!DOCTYPE html>")
    True
"""

from __future__ import annotations

from app.report.data import ReportData
from app.report.render import evidence_card, render_report, write_report
from app.report.summary import summary_sentences

__all__ = ["ReportData", "evidence_card", "render_report", "summary_sentences", "write_report"]
