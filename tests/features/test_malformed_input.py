"""Malformed input, table-driven: each case exits 2 with a message that names the file and the
place inside it (key or line) and a `fix:` line, and writes no warehouse.

Each row is (id, files, argv, expected message parts). ``files`` are written into the test's
working folder (``home/`` maps to the user config folder); ``argv`` runs in-process. The
config is ``eval.yaml`` unless a row brings its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import alias_bomb
from tests.inprocess import evalwh_inprocess

BASE = """name: malformed
models:
  - id: m
    provider: mock
variants:
  - id: v
    messages:
      - {role: user, content: "{{ q }}"}
cases:
  - id: c1
    vars: {q: hi}
    expected: hi
scorecard:
  - name: ok
    type: contains
"""
RUN = ("run", "eval.yaml")


def with_cases(spec: str) -> str:
    """BASE with its inline case replaced by a file source."""
    return BASE.replace("  - id: c1\n    vars: {q: hi}\n    expected: hi\n", spec)


CSV_SPEC = "  - file: cases.csv\n"
JSONL_SPEC = "  - file: cases.jsonl\n"
GARBAGE = b"this is not a DuckDB file " * 200
CASES: list[tuple[str, dict[str, Any], tuple[str, ...], tuple[str, ...]]] = [
    # -- eval.yaml: YAML itself
    (
        "yaml-nested-5000-deep",
        {"eval.yaml": "models: " + "[" * 5000 + "]" * 5000},
        RUN,
        ("eval.yaml:1:", "nested more than 200"),
    ),
    (
        "yaml-alias-bomb",
        {"eval.yaml": BASE + "description:\n" + alias_bomb("  ")},
        RUN,
        ("eval.yaml:", "aliases expand"),
    ),
    (
        "yaml-duplicate-top-level-key",
        {"eval.yaml": BASE + "models: []\n"},
        RUN,
        ("eval.yaml:16:1", "duplicate key 'models'"),
    ),
    (
        "yaml-duplicate-nested-key",
        {"eval.yaml": BASE.replace("    provider: mock\n", "    provider: mock\n    id: m2\n")},
        RUN,
        ("eval.yaml:5:5", "duplicate key 'id'"),
    ),
    (
        "yaml-not-utf8",
        {"eval.yaml": (BASE + "description: caf\xe9\n").encode("latin-1")},
        RUN,
        ("eval.yaml:16:17", "not UTF-8"),
    ),
    (
        "yaml-syntax-error",
        {"eval.yaml": BASE + 'description: "unclosed\n'},
        RUN,
        ("eval.yaml:", "malformed YAML"),
    ),
    (
        "yaml-not-a-mapping",
        {"eval.yaml": "- a\n- b\n"},
        RUN,
        ("eval.yaml", "must be a YAML mapping"),
    ),
    (
        "yaml-lone-surrogate",
        {"eval.yaml": BASE + 'description: "x\\ud800"\n'},
        RUN,
        ("eval.yaml:16:14", "description", "lone surrogate"),
    ),
    # -- eval.yaml: structure
    ("unknown-top-level-key", {"eval.yaml": BASE + "modells: []\n"}, RUN, ("eval.yaml", "modells")),
    (
        "models-not-a-list",
        {"eval.yaml": BASE.replace("models:\n  - id: m\n    provider: mock\n", "models: 5\n")},
        RUN,
        ("eval.yaml", "models"),
    ),
    (
        "inline-vars-a-string",
        {"eval.yaml": BASE.replace("vars: {q: hi}", "vars: hi")},
        RUN,
        ("eval.yaml", "cases[0].vars"),
    ),
    (
        "duplicate-inline-case-id",
        {"eval.yaml": BASE.replace("    expected: hi\n", "    expected: hi\n  - id: c1\n")},
        RUN,
        ("eval.yaml", "duplicate case id 'c1'"),
    ),
    (
        "unknown-scorer-type",
        {"eval.yaml": BASE.replace("type: contains", "type: containz")},
        RUN,
        ("eval.yaml", "scorecard[0]"),
    ),
    (
        "python-scorer-file-missing",
        {"eval.yaml": BASE.replace("type: contains", "type: python\n    function: nope.py:f")},
        RUN,
        ("eval.yaml", "scorecard[0].function", "nope.py"),
    ),
    (
        "python-scorer-timeout-negative",
        {
            "eval.yaml": BASE.replace(
                "type: contains", "type: python\n    function: s.py:f\n    timeout_s: -1"
            ),
            "s.py": "def f(output, case):\n    return True\n",
        },
        RUN,
        ("eval.yaml", "timeout_s"),
    ),
    (
        "python-scorer-import-error",
        {
            "eval.yaml": BASE.replace("type: contains", "type: python\n    function: s.py:f"),
            "s.py": "import no_such_module_at_all\n",
        },
        RUN,
        ("eval.yaml", "scorecard[0].function", "no_such_module_at_all"),
    ),
    (
        "prompt-file-missing",
        {
            "eval.yaml": BASE.replace(
                '    messages:\n      - {role: user, content: "{{ q }}"}\n', "    prompt: p.yaml\n"
            )
        },
        RUN,
        ("eval.yaml", "p.yaml"),
    ),
    (
        "prompt-file-duplicate-key",
        {
            "eval.yaml": BASE.replace(
                '    messages:\n      - {role: user, content: "{{ q }}"}\n', "    prompt: p.yaml\n"
            ),
            "p.yaml": 'messages:\n  - {role: user, content: "{{ q }}"}\nmessages: []\n',
        },
        RUN,
        ("p.yaml:3:1", "duplicate key 'messages'"),
    ),
    (
        "settings-query-timeout-negative",
        {"eval.yaml": BASE + "settings:\n  query_timeout_s: -1\n"},
        RUN,
        ("eval.yaml", "query_timeout_s"),
    ),
    (
        "settings-memory-limit-not-a-size",
        {"eval.yaml": BASE + "settings:\n  memory_limit: lots\n"},
        RUN,
        ("eval.yaml", "memory_limit"),
    ),
    (
        "label-for-unknown-case",
        {"eval.yaml": BASE + "labels:\n  - {case: nope, prefer: baseline}\n"},
        RUN,
        ("eval.yaml", "labels[0]"),
    ),
    (
        "label-prefer-invalid",
        {"eval.yaml": BASE + "labels:\n  - {case: c1, prefer: maybe}\n"},
        RUN,
        ("eval.yaml", "labels[0].prefer"),
    ),
    # -- CSV case files
    (
        "csv-latin-1",
        {"eval.yaml": with_cases(CSV_SPEC), "cases.csv": "id,q\nc1,caf\xe9\n".encode("latin-1")},
        RUN,
        ("cases.csv:2", "not UTF-8"),
    ),
    (
        "csv-header-only",
        {"eval.yaml": with_cases(CSV_SPEC), "cases.csv": "id,q\n"},
        RUN,
        ("cases.csv", "no cases", "cases[0]"),
    ),
    (
        "csv-empty-file",
        {"eval.yaml": with_cases(CSV_SPEC), "cases.csv": ""},
        RUN,
        ("cases.csv", "empty"),
    ),
    (
        "csv-row-with-extra-fields",
        {"eval.yaml": with_cases(CSV_SPEC), "cases.csv": "id,q\nc1,a,b\n"},
        RUN,
        ("cases.csv:2", "more fields than the header"),
    ),
    (
        "csv-duplicate-column",
        {"eval.yaml": with_cases(CSV_SPEC), "cases.csv": "id,q,q\nc1,a,b\n"},
        RUN,
        ("cases.csv:1", "duplicate column"),
    ),
    (
        "csv-mapped-column-missing",
        {
            "eval.yaml": with_cases(CSV_SPEC + "    metadata: [topic]\n"),
            "cases.csv": "id,q\nc1,a\n",
        },
        RUN,
        ("cases.csv:1", "missing column 'topic'"),
    ),
    (
        "csv-duplicate-case-id",
        {"eval.yaml": with_cases(CSV_SPEC), "cases.csv": "id,q\nc1,a\nc1,b\n"},
        RUN,
        ("eval.yaml", "duplicate case id 'c1'", "cases.csv:3"),
    ),
    (
        "csv-unclosed-quote",
        {"eval.yaml": with_cases(CSV_SPEC), "cases.csv": 'id,q\nc1,"unclosed\n'},
        RUN,
        ("cases.csv:2", "malformed CSV"),
    ),
    (
        "csv-text-after-closing-quote",
        {"eval.yaml": with_cases(CSV_SPEC), "cases.csv": 'id,q\nc1,"a"b\n'},
        RUN,
        ("cases.csv:2", "malformed CSV"),
    ),
    # -- JSONL case files
    (
        "jsonl-duplicate-key",
        {
            "eval.yaml": with_cases(JSONL_SPEC),
            "cases.jsonl": '{"id": "c1", "q": "a"}\n{"id": "c2", "q": "a", "q": "b"}\n',
        },
        RUN,
        ("cases.jsonl:2", "duplicate key 'q'"),
    ),
    (
        "jsonl-vars-a-string",
        {"eval.yaml": with_cases(JSONL_SPEC), "cases.jsonl": '{"id": "c1", "vars": "hi"}\n'},
        RUN,
        ("cases.jsonl:1", "'vars' must be a mapping"),
    ),
    (
        "jsonl-metadata-a-list",
        {
            "eval.yaml": with_cases(JSONL_SPEC),
            "cases.jsonl": '{"id": "c1", "vars": {"q": "a"}, "metadata": [1]}\n',
        },
        RUN,
        ("cases.jsonl:1", "'metadata' must be a mapping"),
    ),
    (
        "jsonl-lone-surrogate",
        {"eval.yaml": with_cases(JSONL_SPEC), "cases.jsonl": '{"id": "c1", "q": "x\\ud800"}\n'},
        RUN,
        ("cases.jsonl:1", "q", "lone surrogate"),
    ),
    (
        "jsonl-lone-surrogate-in-vars",
        {
            "eval.yaml": with_cases(JSONL_SPEC),
            "cases.jsonl": '{"id": "c1", "vars": {"q": "\\udfff"}}\n',
        },
        RUN,
        ("cases.jsonl:1", "vars.q", "lone surrogate"),
    ),
    (
        "jsonl-invalid-json",
        {"eval.yaml": with_cases(JSONL_SPEC), "cases.jsonl": '{"id": "c1"}\n{"id": \n'},
        RUN,
        ("cases.jsonl:2", "invalid JSON"),
    ),
    (
        "jsonl-line-not-an-object",
        {"eval.yaml": with_cases(JSONL_SPEC), "cases.jsonl": "[1, 2]\n"},
        RUN,
        ("cases.jsonl:1", "not a JSON object"),
    ),
    (
        "jsonl-nested-5000-deep",
        {
            "eval.yaml": with_cases(JSONL_SPEC),
            "cases.jsonl": '{"id": "c1", "q": ' + "[" * 5000 + "]" * 5000 + "}\n",
        },
        RUN,
        ("cases.jsonl:1", "nested too deeply"),
    ),
    (
        "jsonl-case-without-id",
        {"eval.yaml": with_cases(JSONL_SPEC), "cases.jsonl": '{"vars": {"q": "a"}}\n'},
        RUN,
        ("cases.jsonl:1", "no 'id'"),
    ),
    (
        "jsonl-latin-1",
        {
            "eval.yaml": with_cases(JSONL_SPEC),
            "cases.jsonl": '{"id": "c1"}\n{"id": "caf\xe9"}\n'.encode("latin-1"),
        },
        RUN,
        ("cases.jsonl:2", "not UTF-8"),
    ),
    (
        "jsonl-empty-file",
        {"eval.yaml": with_cases(JSONL_SPEC), "cases.jsonl": "\n\n"},
        RUN,
        ("cases.jsonl", "no cases"),
    ),
    # -- other case sources
    (
        "parquet-not-parquet",
        {"eval.yaml": with_cases("  - file: cases.parquet\n"), "cases.parquet": "id,q\nc1,a\n"},
        RUN,
        ("cases.parquet", "cannot read Parquet"),
    ),
    (
        "cases-unknown-suffix",
        {"eval.yaml": with_cases("  - file: cases.txt\n"), "cases.txt": "x"},
        RUN,
        ("eval.yaml", "cases[0].file", "cannot tell the format"),
    ),
    (
        "cases-file-missing",
        {"eval.yaml": with_cases("  - file: nowhere.csv\n")},
        RUN,
        ("eval.yaml", "cases[0].file", "not found"),
    ),
    # -- flags and environment
    (
        "output-dir-is-a-file",
        {"eval.yaml": BASE, "afile": "x"},
        (*RUN, "-o", "afile"),
        ("afile", "is a file"),
    ),
    ("config-missing", {}, ("run", "missing.yaml"), ("missing.yaml", "not found")),
    ("repeat-zero", {"eval.yaml": BASE}, (*RUN, "--repeat", "0"), ("--repeat",)),
    (
        "env-concurrency-not-a-number",
        {"eval.yaml": BASE, "env:EVALWH_CONCURRENCY": "lots"},
        RUN,
        ("EVALWH_CONCURRENCY", "not an integer"),
    ),
    (
        "env-query-timeout-not-a-number",
        {"eval.yaml": BASE, "env:EVALWH_QUERY_TIMEOUT_S": "soon"},
        RUN,
        ("EVALWH_QUERY_TIMEOUT_S", "not a number"),
    ),
    # -- the user's settings and secrets files
    (
        "user-settings-duplicate-key",
        {"eval.yaml": BASE, "home:config.yaml": "concurrency: 2\nconcurrency: 3\n"},
        RUN,
        ("config.yaml:2:1", "duplicate key 'concurrency'"),
    ),
    (
        "user-settings-unknown-key",
        {"eval.yaml": BASE, "home:config.yaml": "concurrencyy: 2\n"},
        RUN,
        ("config.yaml", "concurrencyy"),
    ),
    (
        "user-settings-not-utf8",
        {"eval.yaml": BASE, "home:config.yaml": "output_dir: caf\xe9\n".encode("latin-1")},
        RUN,
        ("config.yaml:1:", "not UTF-8"),
    ),
    (
        "secrets-file-duplicate-key",
        {
            "eval.yaml": BASE.replace("provider: mock", "provider: openai\n    model: gpt-4o-mini"),
            ".evalwh.secrets.yaml": "OPENAI_API_KEY: a\nOPENAI_API_KEY: b\n",
        },
        RUN,
        (".evalwh.secrets.yaml:2:1", "duplicate key 'OPENAI_API_KEY'"),
    ),
    (
        "secrets-file-alias-bomb",
        {
            "eval.yaml": BASE.replace("provider: mock", "provider: openai\n    model: gpt-4o-mini"),
            ".evalwh.secrets.yaml": "x:\n" + alias_bomb("  ") + "\n",
        },
        RUN,
        (".evalwh.secrets.yaml:", "aliases expand"),
    ),
    # -- the warehouse
    (
        "corrupt-warehouse",
        {"eval.yaml": BASE, ".evalwh/warehouse.duckdb": GARBAGE},
        RUN,
        ("warehouse.duckdb", "not a valid DuckDB", "fix:"),
    ),
    (
        "corrupt-warehouse-list",
        {".evalwh/warehouse.duckdb": GARBAGE},
        ("list",),
        ("warehouse.duckdb", "not a valid DuckDB", "fix:"),
    ),
]


def _place(files: dict[str, Any], work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path(str(work.parent / "home" / ".config" / "evalwh"))
    for name, content in files.items():
        if name.startswith("env:"):
            monkeypatch.setenv(name[4:], content)
            continue
        target = home / name[5:] if name.startswith("home:") else work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def _warehouses(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*.duckdb*")}


@pytest.mark.parametrize(
    ("files", "argv", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_malformed_input_exits_2_naming_the_place_and_writes_nothing(
    capsys, isolated: Path, monkeypatch: pytest.MonkeyPatch, files, argv, expected
):
    _place(files, isolated, monkeypatch)
    before = _warehouses(isolated.parent)
    code, out, err = evalwh_inprocess(capsys, *argv)
    message = out + err
    assert code == 2, message
    for part in expected:
        assert part in message, f"{part!r} not in: {message}"
    assert "Traceback" not in message
    if argv[-2:] != ("--repeat", "0"):  # the option parser's own message names the flag
        assert "fix:" in err or '"fix": "' in out, message
    assert _warehouses(isolated.parent) == before  # nothing created, nothing changed


def test_the_table_holds_at_least_40_malformed_inputs():
    assert len(CASES) >= 40
    assert len({c[0] for c in CASES}) == len(CASES)


def test_a_long_csv_cell_is_not_malformed(capsys, isolated: Path, monkeypatch):
    """Past the csv module's 128 KB default field limit (a long document as a case var)."""
    long = "x" * 300_000
    _place(
        {"eval.yaml": with_cases(CSV_SPEC), "cases.csv": f"id,q\nc1,{long}\n"},
        isolated,
        monkeypatch,
    )
    code, _, err = evalwh_inprocess(capsys, "validate", "eval.yaml")
    assert code == 0, err
