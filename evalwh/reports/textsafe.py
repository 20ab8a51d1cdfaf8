"""Neutralising untrusted text (model outputs, labels, suite names, case data) for where it goes.

Model outputs, case files and provider replies are untrusted (docs/security.md). Printed raw,
an ``ESC [2J`` clears the screen, an OSC 8 sequence plants a link and an OSC 52 sequence
writes the clipboard; in an export, a C0 byte makes JUnit XML invalid, a ``|`` or newline
breaks a Markdown table, and a CSV cell starting with ``=`` runs as a spreadsheet formula.

One function per destination, each the only place that destination is made safe:

>>> terminal_safe("ok\\x1b[2Jgone")
'ok\\\\x1b[2Jgone'
>>> xml_safe("a\\x00b")
'a\\\\x00b'
>>> md_cell("a|b\\nc")
'a\\\\|b c'
>>> import pyarrow as pa
>>> csv_safe_table(pa.table({"c": ['=HYPERLINK("http://x")']}))["c"][0].as_py()
'\\'=HYPERLINK("http://x")'
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

# C0 controls but tab and newline, DEL, C1 controls, and the bidi overrides and isolates
# (text that reads differently from how it is stored, "trojan source").
_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_TERMINAL_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# XML 1.0 allows tab, newline, CR and text from U+0020 on, except surrogates and U+FFFE/FFFF;
# C1 controls are allowed but discouraged, and are as dangerous in a viewer's terminal.
_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# What a CSV cell shows escaped: the XML-forbidden controls and C1 (tab, newline, CR stay).
CSV_CONTROL = tuple(
    chr(c) for c in [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)]
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str, *, one_line: bool = False) -> str:
    """``text`` with control characters shown escaped (``\\x1b``); newline and tab are kept
    unless ``one_line``."""
    return (_TERMINAL_ONE_LINE if one_line else _TERMINAL).sub(_escape, text)


_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_safe(document: str) -> str:
    """A JSON document (``json.dumps(..., ensure_ascii=False)``) with the characters JSON
    leaves raw but a terminal acts on (DEL, C1, bidi overrides) written as ``\\uXXXX``
    escapes; C0 controls are escaped by ``json.dumps`` already."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", document)


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 forbids (and C1 controls) shown escaped."""
    return _XML.sub(_escape, text)


def md_cell(text: str) -> str:
    """``text`` fit for one Markdown table cell or heading: one line, ``|`` escaped, no
    control characters."""
    flat = " ".join(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return terminal_safe(flat, one_line=True).replace("|", "\\|")


def csv_safe_table(table: pa.Table, *, keep_formulas: bool = False) -> pa.Table:
    """``table`` fit for CSV: in every text column, control characters are shown escaped
    (tab, newline and CR stay: CSV quotes them) and a cell starting with ``= + - @``, tab or
    CR gets a leading ``'`` so a spreadsheet shows it instead of running it, unless
    ``keep_formulas``. Column-wise with Arrow compute."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for column in table.columns:
        if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
            columns.append(column)
            continue
        if not keep_formulas:
            starts = "^[" + re.escape("".join(CSV_FORMULA_START)) + "]"
            risky = pc.fill_null(pc.match_substring_regex(column, starts), False)
            column = pc.if_else(risky, pc.binary_join_element_wise("'", column, ""), column)
        for char in CSV_CONTROL:
            if pc.any(pc.match_substring(column, char)).as_py():
                column = pc.replace_substring(column, char, f"\\x{ord(char):02x}")
        columns.append(column)
    return pa.table(columns, names=table.column_names)
