"""Run the `evalwh` command inside the test process: much faster than a subprocess, for
checks that do not need a process of their own (exit codes of `run` do)."""

from __future__ import annotations

import dataclasses

import pytest


def evalwh_inprocess(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `evalwh ARGS`, with the global options reset first and
    put back afterwards (a `--json` here must not leak into the next test)."""
    from evalwh.cli import state
    from evalwh.cli.main import main

    fields = dataclasses.fields(state.GlobalState)
    saved = {f.name: getattr(state.STATE, f.name) for f in fields}
    for f in fields:
        setattr(state.STATE, f.name, f.default)
    capsys.readouterr()
    try:
        code = main(list(args))
    finally:
        for name, value in saved.items():
            setattr(state.STATE, name, value)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
