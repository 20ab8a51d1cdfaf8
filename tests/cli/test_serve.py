"""`evalwh serve`'s own refusals: without the viewer extra it names it and exits 2; a short
token is refused."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli


# -- the command -------------------------------------------------------------------------------
def test_serve_without_the_extra_names_it_and_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from evalwh.cli.main import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "fastapi" else real(name, *a)
    )
    assert main(["serve"]) == 2


def test_serve_refuses_a_short_token() -> None:
    r = run_cli("serve", "--token", "short")
    assert r.returncode == 2 and "16 characters" in r.stderr


def test_serve_without_the_extra_message(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from evalwh.cli.main import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    assert main(["serve"]) == 2
    assert "evalwh[viewer]" in capsys.readouterr().err
