"""`evalwh --help` stays light: no heavy library is imported to print help."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pyarrow", "polars", "httpx", "mcp", "duckdb", "jsonschema", "jinja2")


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from evalwh.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['--help'])\n"
        "import json; print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert data["code"] == 0
    loaded = {m.split(".")[0] for m in data["modules"]}
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_import_evalwh_is_lazy() -> None:
    code = "import sys, evalwh; print(','.join(m for m in sys.modules if m.startswith(('duckdb','polars','pyarrow'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
