"""A length of time in a user's words, as every line that says a duration writes it (a job's
time left, a calibration's or an encoder's cost)."""

from __future__ import annotations


def span(seconds: float) -> str:
    """A length of time in a user's words, rounded to its largest unit.

    Example:
        >>> span(8.4), span(130), span(442), span(5400)
        ('8 s', '2 min', '7 min', '1 h 30 min')
    """
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{round(s / 60)} min"
    return f"{s // 3600} h {round(s % 3600 / 60)} min"
