"""The `evalwh` command. Parses, calls evalwh.api, renders; errors become exit codes.

Exit codes: 0 success, 1 a threshold failed, 2 bad usage, config or file (a full disk, a
foreign warehouse, a run held by another process), 3 the run failed (too many requests
errored), 4 cost refused, 130 interrupted (Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import sys

import typer

from evalwh import __version__
from evalwh.cli import analysis as analysis_cmd
from evalwh.cli import batch as batch_cmd
from evalwh.cli import cache as cache_cmd
from evalwh.cli import calibrate as calibrate_cmd
from evalwh.cli import imports as imports_cmd
from evalwh.cli import lake as lake_cmd
from evalwh.cli import mcp as mcp_cmd
from evalwh.cli import prices as prices_cmd
from evalwh.cli import reports as reports_cmd
from evalwh.cli import run as run_cmd
from evalwh.cli import runs as runs_cmd
from evalwh.cli import serve as serve_cmd
from evalwh.cli.state import (
    STATE,
    CacheDirOpt,
    ConfigOpt,
    JsonOpt,
    NoColorOpt,
    OutputDirOpt,
    QuietOpt,
    VerboseOpt,
    WarehouseOpt,
    configure_logging,
    emit_json,
    err,
)

app = typer.Typer(
    name="evalwh",
    help="Evaluate LLM prompts and models; keep every result in a DuckDB warehouse.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"evalwh {__version__}")
        raise typer.Exit()


@app.callback()
def callback(
    config: ConfigOpt = None,
    output_dir: OutputDirOpt = None,
    warehouse: WarehouseOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
    no_color: NoColorOpt = False,
    json: JsonOpt = False,
    cache_dir: CacheDirOpt = None,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Evaluate LLM prompts and models; keep every result in a DuckDB warehouse."""
    STATE.merge(
        config=config,
        output_dir=output_dir,
        warehouse=warehouse,
        quiet=quiet,
        verbose=verbose,
        no_color=no_color,
        json=json,
        cache_dir=cache_dir,
    )
    configure_logging()


app.command("run")(run_cmd.run)
# `evalwh finish`, not `evalwh run finish`: `run` takes a CONFIG argument, so a `finish`
# subcommand under it would shadow a config file named `finish` (docs/scale-out.md).
app.command("finish")(run_cmd.finish)
app.command("validate")(run_cmd.validate)
app.command("list")(runs_cmd.list_runs)
app.command("show")(runs_cmd.show)
app.command("last")(runs_cmd.last)
app.command("init")(runs_cmd.init)
app.add_typer(cache_cmd.app, name="cache")
app.add_typer(lake_cmd.app, name="lake")
app.add_typer(batch_cmd.app, name="batch")
app.command("calibrate")(calibrate_cmd.calibrate)
app.command("compare")(analysis_cmd.compare)
app.command("gate")(analysis_cmd.gate)
app.add_typer(analysis_cmd.baseline_app, name="baseline")
app.command("repeats")(analysis_cmd.repeats)
app.command("sql")(analysis_cmd.sql)
app.command("export")(analysis_cmd.export)
app.command("migrate")(runs_cmd.migrate)
app.command("decide")(reports_cmd.decide)
app.add_typer(reports_cmd.labels_app, name="labels")
app.command("mcp")(mcp_cmd.mcp)
app.command("serve")(serve_cmd.serve)
app.add_typer(imports_cmd.app, name="import")
app.command("prices")(prices_cmd.prices)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit code."""
    from evalwh.engine.signals import sigterm_like_sigint

    with sigterm_like_sigint():  # SIGTERM ends any phase as Ctrl-C does: exit code 130
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    from evalwh.errors import EvalwhError

    try:
        code = app(args=argv, prog_name="evalwh", standalone_mode=False)
        if code == 130:  # typer returns 130 for a KeyboardInterrupt (Ctrl-C, or SIGTERM)
            return _interrupted()
        return code if isinstance(code, int) else 0
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except KeyboardInterrupt:
        return _interrupted()
    except EvalwhError as exc:
        if STATE.json:
            emit_json(exc.to_dict())
        prefix = "" if exc.exit_code == 130 else "error: "  # an interrupt is not an error
        err().print(f"{prefix}{exc}", markup=False, style="red" if not STATE.no_color else None)
        return exc.exit_code
    except OSError as exc:  # a file problem the core did not name: still no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        err().print(f"error: {where}{exc.strerror or exc}", markup=False)
        return 2
    except typer.Abort:  # Ctrl-C inside the command-line parser's own handling
        return _interrupted()
    except Exception as exc:  # the command-line parser's usage errors carry their own exit code
        show = getattr(exc, "show", None)
        if callable(show) and isinstance(getattr(exc, "exit_code", None), int):
            show()
            return int(exc.exit_code)  # type: ignore[attr-defined]
        raise


def _interrupted() -> int:
    """Ctrl-C or SIGTERM outside a run's event loop (planning, the export): exit code 130."""
    err().print("interrupted: the rows already flushed are kept (see `evalwh list`)")
    return 130


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
