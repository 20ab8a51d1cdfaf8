"""What every viewer page's frame (templates/base.html.j2) shows besides the page: the keyboard
shortcuts its help dialog lists (the ``?`` key opens it; static/viewer.js). Its icon is the
report's (evalwh.reports.html.favicon)."""

from __future__ import annotations

# (keys, where, what): the shortcuts the pages have, as the help dialog lists them
SHORTCUTS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("?",), "any page", "show this list of keys"),
    (("Escape",), "this list", "close it and go back where you were"),
    (("Tab", "Shift+Tab"), "any page", "move to the next or previous link, button or field"),
    (("Enter",), "a run, case or compare link", "open it (a case link opens the case's history)"),
    (("Space",), "the A / B choices of the runs list", "pick the two runs to compare"),
    (("a", "t", "b"), "run page, Label tab", "prefer answer A, a tie, prefer answer B"),
    (("p", "f"), "run page, Label answers tab", "the highlighted answer passes or fails"),
    (("j", "k"), "run page, labelling tabs", "next or previous pair or answer"),
)
