"""`evalwh --help` stays light: no heavy library is imported to print help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def _heavy_after(statement: str) -> str:
    """The DuckDB, Polars and Arrow modules a fresh process has loaded after ``statement``."""
    code = (
        f"import sys, evalwh\n{statement}\n"
        "print(','.join(m for m in sys.modules if m.startswith(('duckdb','polars','pyarrow'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_import_evalwh_is_lazy() -> None:
    assert _heavy_after("pass") == ""


def test_the_notebook_names_load_nothing_heavy_until_called() -> None:
    # evalwh.connect and evalwh.frames come through the lazy facade; DuckDB and Polars load
    # when a frame is asked for, not when a notebook's first cell names them
    names = "evalwh.connect, evalwh.frames.runs, evalwh.frames.cases, evalwh.frames.scores"
    assert _heavy_after(names) == ""


# What a user install has not got (pandas is in the dev venv, for statsmodels): DuckDB and
# pyarrow import it when they find it, and it imports pyarrow.compute
WITHOUT_PANDAS = (
    "class NoPandas:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.partition('.')[0] == 'pandas':\n"
    "            raise ModuleNotFoundError(name)\n"
    "sys.meta_path.insert(0, NoPandas())\n"
)


def _modules_of_run(config: Path, cwd: Path, *, user_install: bool = False) -> set[str]:
    """The modules a whole `evalwh run CONFIG -q` process has imported when it ends
    (``user_install``: as where pandas is not installed)."""
    code = (
        "import sys, io, contextlib, json\n"
        + (WITHOUT_PANDAS if user_install else "")
        + "from evalwh.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['run', {str(config)!r}, '-q'])\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=cwd
    )
    data = json.loads(out.stdout.splitlines()[-1])
    assert data["code"] in (0, 1), out.stderr
    return set(data["modules"])


def test_a_run_and_its_cached_rerun_skip_what_they_do_not_use(quickstart: Path) -> None:
    """DuckDB scans a registered pyarrow table through pyarrow.dataset (~60 ms of CPU to import):
    the writer's batches and the cache lookup's hashes go in as Arrow streams instead. jsonschema
    (~50 ms) is imported only to check documents it has not passed before (this test's home
    is new, so the first run checks them)."""
    for rerun in (False, True):  # the rerun answers from the cache (the lookup registers hashes)
        loaded = _modules_of_run(quickstart, quickstart.parent)
        assert "duckdb" in loaded and "pyarrow" in loaded, rerun  # it did run and write
        assert "pyarrow.dataset" not in loaded, rerun
        assert ("jsonschema" in loaded) is not rerun


def _modules_of_one_case_run(folder: Path) -> set[str]:
    """The modules of a 1-case mock run whose prompt, mock reply and criterion are plain."""
    (folder / "eval.yaml").write_text(
        "models: [{id: m, provider: mock, mock: {default: 'It is {{ expected }}.'}}]\n"
        'variants: [{id: v, messages: [{role: user, content: "Q: {{ q }}"}]}]\n'
        "cases: [{id: c1, vars: {q: one}, expected: one}]\n"
        "scorecard: [{name: has, type: contains, value: '{{ expected }}'}]\n",
        encoding="utf-8",
    )
    loaded = _modules_of_run(folder / "eval.yaml", folder, user_install=True)
    assert "duckdb" in loaded  # it did run and write
    return loaded


def test_a_one_case_mock_run_with_plain_templates_imports_no_jinja_or_http_client(
    tmp_path: Path,
) -> None:
    """The 1-case run's fixed cost: a prompt and a mock reply made only of text and
    ``{{ name }}`` render without Jinja (~50 ms to import), and a run that embeds nothing
    loads no HTTP provider (httpx, ssl contexts: ~50 ms). The CLI parses without pydantic:
    typer 0.29 parses each option through a pydantic TypeAdapter (importing pydantic and
    building ~26 adapters for `run`: ~0.25 s of CPU); the pin below it uses click's types."""
    loaded = _modules_of_one_case_run(tmp_path)
    assert not {m.split(".")[0] for m in loaded} & {"pydantic", "pydantic_core"}
    assert not {m.split(".")[0] for m in loaded} & {"jinja2", "httpx", "markupsafe"}
    assert not {"evalwh.providers.http", "evalwh.providers.embeddings"} & loaded
    # nor what it does not use: Arrow's compute functions (~60 ms: the loader's check of
    # streamed files' ids), the batch modules, rich's emoji table (emoji codes print as typed)
    assert not {"pyarrow.compute", "evalwh.engine.batch", "rich._emoji_codes"} & loaded


def test_built_in_providers_and_scorers_read_no_entry_points(monkeypatch, tmp_path: Path) -> None:
    """Scanning every installed package's metadata for plug-ins costs ~5-20 ms: a built-in
    name never needs it; an unknown one still does (and still gets the list)."""
    import pytest

    from evalwh import providers
    from evalwh.config.model import Criterion
    from evalwh.errors import ConfigError
    from evalwh.scoring import base

    scans: list[str] = []

    def counting(group: str) -> list[object]:
        scans.append(group)
        return []

    monkeypatch.setattr(providers, "entry_points", counting)
    monkeypatch.setattr(base, "entry_points", counting)
    providers.available.cache_clear()
    base.available.cache_clear()
    try:
        assert providers.provider_class("mock").__name__ == "MockProvider"
        assert callable(base.scorer_factory(Criterion(name="c", type="exact")))
        assert scans == []
        with pytest.raises(ConfigError, match="use one of: anthropic"):
            providers.provider_class("nope")
        with pytest.raises(ConfigError, match="unknown scorer type"):
            base.scorer_factory(Criterion(name="c", type="nope"))
        assert scans == ["evalwh.providers", "evalwh.scorers"]
    finally:
        providers.available.cache_clear()
        base.available.cache_clear()
