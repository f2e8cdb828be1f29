"""The report's section on the annotators (a team project): how far they agree on the items
labelled twice, and the intents they disagree on with the disputed utterances (often the
intents that need a clearer description or a merge)."""

from __future__ import annotations

from typing import Any

from app.report.data import esc


def _value(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def agreement_section(team: dict[str, Any] | None) -> str:
    """HTML for ``ReportData.team`` (None or no item labelled twice: nothing).

    Example:
        >>> agreement_section(None)
        ''
    """
    if not team or not team["items"]:
        return ""
    pairs = "".join(
        f"<tr><td>{esc(p['a'])} – {esc(p['b'])}</td><td class='num'>{p['items']}</td>"
        f"<td class='num'>{p['agreed']}</td><td class='num'>{_value(p['kappa'])}</td></tr>"
        for p in team["pairs"]
    )
    intents = "".join(
        f"<tr><td>{esc(r['intent'])}</td><td class='num'>{r['statistic']} "
        f"{_value(r['agreement'])}</td><td class='num'>{r['disputed']}</td>"
        f"<td>{esc(' · '.join(r['examples']))}</td></tr>"
        for r in team["intents"][:10]
    )
    disputed = (
        "<h3>Intents they disagree on, lowest agreement first</h3><table><thead><tr>"
        "<th>intent</th><th>agreement</th><th>disputed</th><th>disputed utterances</th></tr>"
        f"</thead><tbody>{intents}</tbody></table>"
        if intents
        else "<p>No intent is disputed.</p>"
    )
    return (
        "<section><h2>How far the annotators agree</h2>"
        f"<p>{team['items']} utterances were labelled by two annotators or more; "
        f"{team['disputed']} got different answers. Krippendorff's α (1 = always the same "
        f"answer, 0 = no better than chance): <b>{_value(team['alpha'])}</b>.</p>"
        "<table><thead><tr><th>annotators</th><th>utterances</th><th>same answer</th>"
        f"<th>Cohen's κ</th></tr></thead><tbody>{pairs}</tbody></table>{disputed}</section>"
    )
