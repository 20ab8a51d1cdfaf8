"""The warehouse in a notebook: :func:`connect` (a read-only DuckDB connection) and the
tables ``runs``, ``cases`` and ``scores`` as Polars frames with their JSON columns typed.

import evalwh
runs = evalwh.frames.runs()                       # one row per run, newest first
cases = evalwh.frames.cases("latest")             # one run's answers (all runs: no argument)
cases.filter(pl.col("metadata").struct.field("lang") == "fr")

A JSON column (``metadata``, ``vars``, ``totals``, ``details`` ...) comes as the Polars type
its values share: DuckDB's ``json_group_structure`` merges the shapes of the column's values
in the rows read (objects into one struct whose fields are the union of their keys, arrays
into lists) and ``json_transform`` reads every value into it, so an analyst filters, groups
and sorts on ``struct.field``/``list`` expressions and can write the frame to Parquet. A
place where the values disagree (a key that is a number in one case and text in another)
stays JSON text there, and so does a whole column whose merged shape is larger than
:data:`MAX_SHAPE` characters (a case file with thousands of distinct keys would otherwise
make a frame of thousands of columns): ``str.json_decode`` reads such text. ``pl.Object``
was not chosen: it cannot be filtered, grouped, compared or saved.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.api.view import open_warehouse

if TYPE_CHECKING:
    import duckdb
    import polars as pl

    from evalwh.config.model import EvalConfig

#: A JSON column whose merged shape is longer than this (characters of its JSON) stays text.
MAX_SHAPE = 100_000
# each table's row order: its key
ORDER = {
    "runs": "run_id DESC",
    "cases": "run_id, variant, model, case_id, repeat",
    "scores": "run_id, variant, model, case_id, repeat, criterion",
}


def connect(
    config: str | Path | EvalConfig | None = None,
    *,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> duckdb.DuckDBPyConnection:
    """A read-only DuckDB connection to the warehouse (or lake) the settings, a config,
    ``output_dir`` or ``warehouse`` name, as `evalwh sql` reads it: attached READ_ONLY, no
    other file reachable, its configuration locked, within the settings' query memory and
    threads. Close it when done (``with evalwh.connect() as con:``): while it is open a run
    cannot write the warehouse file."""
    from evalwh.analysis.readonly import open_readonly

    view = open_warehouse(config=config, output_dir=output_dir, warehouse=warehouse)
    return open_readonly(view.path, view.query_bounds())


def runs(
    config: str | Path | EvalConfig | None = None,
    *,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> pl.DataFrame:
    """Every run, newest first: the ``runs`` table with ``config_snapshot``, ``filters``,
    ``totals``, ``datasources`` and ``source_extra`` typed."""
    return _frame("runs", None, config, output_dir, warehouse)


def cases(
    run: str | None = None,
    config: str | Path | EvalConfig | None = None,
    *,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> pl.DataFrame:
    """One row per answer (variant × model × case × repeat) of the run ``run`` names (an
    id, a label, 'latest' ... as `evalwh show` takes), of every run when None: the
    ``cases`` table with ``vars``, ``expected``, ``metadata``, ``messages``, ``tool_calls``
    and the other JSON columns typed."""
    return _frame("cases", run, config, output_dir, warehouse)


def scores(
    run: str | None = None,
    config: str | Path | EvalConfig | None = None,
    *,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> pl.DataFrame:
    """One row per criterion of each answer of the run ``run`` names (every run when None):
    the ``scores`` table with ``details`` typed."""
    return _frame("scores", run, config, output_dir, warehouse)


def _frame(
    table: str,
    run: str | None,
    config: str | Path | EvalConfig | None,
    output_dir: str | Path | None,
    warehouse: str | Path | None,
) -> pl.DataFrame:
    from evalwh.analysis.readonly import open_readonly

    view = open_warehouse(config=config, output_dir=output_dir, warehouse=warehouse)
    params: dict[str, Any] = {}
    where = ""
    if run is not None:
        params["run_id"], where = view.resolve(run), " WHERE run_id = $run_id"
    with closing(open_readonly(view.path, view.query_bounds())) as con:
        columns = [(name, kind) for name, kind, *_ in con.execute(f"DESCRIBE {table}").fetchall()]
        shapes = _shapes(con, table, where, params, [n for n, kind in columns if kind == "JSON"])
        select = []
        for name, _ in columns:
            if shapes.get(name) is None:
                select.append(f'"{name}"')
            else:
                params[f"shape_{name}"] = shapes[name]
                select.append(f'json_transform("{name}", $shape_{name}) AS "{name}"')
        sql = f"SELECT {', '.join(select)} FROM {table}{where} ORDER BY {ORDER[table]}"
        return con.execute(sql, params).pl()


def _shapes(
    con: duckdb.DuckDBPyConnection,
    table: str,
    where: str,
    params: dict[str, Any],
    names: list[str],
) -> dict[str, str | None]:
    """Each JSON column's merged shape over the rows read (one pass), None where it stays
    text: no value, values of no common shape, or a shape past MAX_SHAPE."""
    if not names:
        return {}
    merged = ", ".join(f'json_group_structure("{n}")' for n in names)
    row = con.execute(f"SELECT {merged} FROM {table}{where}", params).fetchone() or ()
    return {
        name: None if shape in (None, '"JSON"', '"NULL"') or len(shape) > MAX_SHAPE else shape
        for name, shape in zip(names, row, strict=True)
    }
