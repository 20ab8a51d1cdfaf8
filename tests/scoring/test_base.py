"""Building a criterion's scorer (evalwh/scoring/base.py): the registry of scorer types, built-in
and entry-point plug-ins, the config error of an unknown type, and a package import that stays
cheap (no jsonschema or yaml until a scorer needs them).

``crit``, ``run`` and ``build_error`` build one criterion's scorer through ``build_scorer``, as
a config does; the other scoring test modules use them too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import evalwh
from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring import base as scoring_base
from evalwh.scoring import (
    build_scorer,
)
from tests.builders import BASE
from tests.conftest import write

FILE = "eval.yaml"


def crit(type_: str, name: str = "c", where: str = "scorecard[0]", **options) -> Criterion:
    extra = {k: options.pop(k) for k in ("weight", "required", "threshold") if k in options}
    return Criterion(name=name, type=type_, options=options, where=where, **extra)


def run(criterion: Criterion, output: str, case: Case | None = None, root: Path | None = None):
    fn = build_scorer(criterion, root or Path.cwd(), FILE)
    return fn(output, case or Case(id="c1"))


def build_error(criterion: Criterion, root: Path | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        build_scorer(criterion, root or Path.cwd(), FILE)
    return info.value


def test_unknown_type_is_a_config_error():
    err = build_error(crit("levenshtein"))
    assert err.where == "scorecard[0].type"
    assert "unknown scorer type 'levenshtein'" in err.message
    assert "exact" in err.fix


def test_entry_point_scorers_are_merged(monkeypatch, tmp_path: Path, helper_module: str):
    class FakeEntryPoint:
        name = "always-half"
        value = "evalwh.scoring.python:python_scorer"

    def fake_entry_points(group: str):
        assert group == "evalwh.scorers"
        return [FakeEntryPoint()]

    monkeypatch.setattr(scoring_base, "entry_points", fake_entry_points)
    scoring_base.available.cache_clear()
    try:
        assert scoring_base.available()["always-half"] == FakeEntryPoint.value
        assert scoring_base.available()["exact"] == "evalwh.scoring.builtin:exact"
        c = crit("always-half", function=f"{helper_module}:half")
        assert run(c, "x", root=tmp_path).score == 0.5
    finally:
        scoring_base.available.cache_clear()


def test_package_import_does_not_load_jsonschema():
    code = (
        "import sys, evalwh.scoring\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'yaml'))\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_plug_in_scorer_type_takes_its_own_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.scoring import base

    write(
        tmp_path / "plug.py",
        "from evalwh.scoring import ScoreResult\n\n"
        "def factory(criterion, root, file):\n"
        "    word = criterion.options['word']\n"
        "    return lambda output, case: ScoreResult(1.0 if word in output else 0.0)\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(base.SCORERS, "has-word", "plug:factory")
    base.available.cache_clear()
    try:
        cfg = write(
            tmp_path / "eval.yaml",
            BASE.replace("    type: exact\n", "    type: has-word\n    word: hi\n"),
        )
        result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
        assert result.totals["n_passed"] == 1
    finally:
        base.available.cache_clear()
