"""What every viewer page's frame (templates/base.html.j2) shows besides the page: its icon and
the keyboard shortcuts its help dialog lists (the ``?`` key opens it; static/viewer.js)."""

from __future__ import annotations

from urllib.parse import quote

# the icon, inline: no page asks the server for /favicon.ico (an SVG of a bar chart)
ICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    '<rect width="16" height="16" rx="3" fill="#2458c6"/>'
    '<rect x="3" y="8" width="2.5" height="5" fill="#fff"/>'
    '<rect x="6.75" y="5" width="2.5" height="8" fill="#fff"/>'
    '<rect x="10.5" y="3" width="2.5" height="10" fill="#fff"/></svg>'
)
FAVICON = "data:image/svg+xml," + quote(ICON_SVG)

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
