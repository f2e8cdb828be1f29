"""Files the app ships with its code: the page's stylesheet and scripts, the vendored plotly.js
bundle for reports, and the demo project."""

from __future__ import annotations

from importlib import resources


def text(name: str) -> str:
    """The UTF-8 text of the bundled file ``name`` (e.g. ``"style.css"``)."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
