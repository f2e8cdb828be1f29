"""The report's stylesheet (inline: the file loads nothing from anywhere)."""

from __future__ import annotations

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d232a;
background:#f6f7f9;line-height:1.45}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{margin:0 0 4px;font-size:1.6rem}h2{margin:0 0 10px;font-size:1.15rem}
.meta{color:#5a6470;font-size:.9rem}code{background:#eceff3;padding:1px 4px;border-radius:3px}
section{background:#fff;border:1px solid #e1e5ea;border-radius:8px;padding:16px;margin:16px 0}
.summary p{margin:8px 0}.summary p.lead{font-size:1.2rem;margin-top:0}
table{border-collapse:collapse;font-size:.92rem}
th,td{padding:4px 10px;border-bottom:1px solid #eceff3;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.what{color:#5a6470;font-size:.85rem;max-width:420px}
.better{color:#1a7f37}.worse{color:#c62828}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:12px}
.card{border:1px solid #e1e5ea;border-radius:8px;padding:12px;background:#fff}
.card .utt{font-weight:600;margin-bottom:6px}.card p{margin:6px 0}
.card ul{margin:4px 0;padding-left:18px;font-size:.88rem}
.card summary{cursor:pointer;color:#5a6470;font-size:.88rem}
.badge{display:inline-block;font-size:.75rem;padding:1px 6px;border-radius:10px;margin-right:4px}
.ok{background:#dff3e4;color:#1a7f37}.bad{background:#fde2e1;color:#c62828}
.warn{background:#fff3cd;color:#7a5a00}
.sim{color:#5a6470;font-size:.85rem;font-variant-numeric:tabular-nums}
table.bars{width:100%}table.bars td{padding:2px 8px}
td.barcell{width:55%}.bar{height:12px;background:#4c78a8;border-radius:2px}
footer{color:#8a939e;font-size:.8rem;margin:24px 0}
@media print{body{background:#fff}section{break-inside:avoid}}
"""
