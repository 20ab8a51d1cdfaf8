"""Run the `evalwh` command inside the test process: much faster than a subprocess, for
checks that do not need a process of their own (exit codes of `run` do)."""

from __future__ import annotations

import dataclasses

import pytest


def evalwh_inprocess(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `evalwh ARGS`, with the global options reset first."""
    from evalwh.cli import state
    from evalwh.cli.main import main

    for f in dataclasses.fields(state.GlobalState):
        setattr(state.STATE, f.name, f.default)
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
