"""Tests for realistic one-line bugs that once survived the whole suite (issue 21's mutation
survey): each test names the bug it catches. The threshold-boundary ones are in
test_boundaries.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pytest

import evalwh
from evalwh import load_config, providers
from evalwh.config.model import ModelSpec
from evalwh.engine.plan import model_identity, request_hash
from evalwh.errors import ConfigError
from evalwh.providers.base import Completion, ProviderError, Request
from evalwh.warehouse import connect, queries
from tests.conftest import ROOT
from tests.inprocess import evalwh_inprocess
from tests.test_engine import config


class Counting:
    """A provider that counts calls per (model id, case id) and does what ``behaviour`` says."""

    calls: ClassVar[list[tuple[str, str, int]]] = []
    behaviour: ClassVar[dict[str, Any]] = {}

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    async def complete(self, request: Request) -> Completion:
        self.calls.append((request.model.id, request.case.id, request.attempt))
        action = self.behaviour.get(request.case.id)
        if isinstance(action, BaseException):
            raise action
        return Completion(text=str(request.case.expected), input_tokens=3, output_tokens=1)

    async def aclose(self) -> None:
        return None


@pytest.fixture(autouse=True)
def counting(monkeypatch: pytest.MonkeyPatch) -> type[Counting]:
    monkeypatch.setitem(providers.BUILTIN, "counting", f"{__name__}:Counting")
    providers.available.cache_clear()
    Counting.calls, Counting.behaviour = [], {}
    yield Counting
    providers.available.cache_clear()


def stored(out: Path, sql: str) -> list[dict[str, Any]]:
    return evalwh.open_warehouse(out / "warehouse.duckdb").sql(sql).to_pylist()


# -- config/loader.py: the default max_retries (3) -------------------------------------------
def test_max_retries_left_unset_retries_a_transient_error_three_times(tmp_path: Path) -> None:
    # bug: the loader's default max_retries 3 -> 0 (no test left it unset)
    Counting.behaviour["c0"] = ProviderError("overloaded", retryable=True, retry_after=0.0)
    cfg = config(tmp_path, "  - {id: a, provider: counting}", 1)
    assert load_config(cfg).models[0].max_retries == 3
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert [attempt for _, _, attempt in Counting.calls] == [1, 2, 3, 4]
    assert result.totals["n_errors"] == 1 and result.stats["retries"] == 3
    assert stored(tmp_path / "out", "SELECT attempts FROM cases") == [{"attempts": 4}]


# -- engine/plan.py: model params are part of a request's identity ---------------------------
def test_models_differing_only_in_params_get_different_request_hashes(tmp_path: Path) -> None:
    # bug: the request hash ignores params, so a temperature-1 model reuses the answers of
    # the temperature-0 model (the cache and resume key on the hash)
    cold = ModelSpec(id="a", provider="p", model="m", params={"temperature": 0})
    hot = ModelSpec(id="b", provider="p", model="m", params={"temperature": 1})
    twin = ModelSpec(id="c", provider="p", model="m", params={"temperature": 0})
    messages = [{"role": "user", "content": "hi"}]
    assert request_hash(model_identity(cold), messages, 0) != request_hash(
        model_identity(hot), messages, 0
    )
    # the model id is a name, not part of the request: same params, same hash
    assert request_hash(model_identity(cold), messages, 0) == request_hash(
        model_identity(twin), messages, 0
    )

    cfg = config(
        tmp_path,
        "  - {id: cold, provider: counting, model: m, params: {temperature: 0}}\n"
        "  - {id: hot, provider: counting, model: m, params: {temperature: 1}}",
        2,
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert sorted((m, c) for m, c, _ in Counting.calls) == [
        ("cold", "c0"),
        ("cold", "c1"),
        ("hot", "c0"),
        ("hot", "c1"),
    ]
    rows = stored(tmp_path / "out", "SELECT model, request_hash, cached FROM cases")
    assert len({r["request_hash"] for r in rows}) == 4 and not any(r["cached"] for r in rows)


# -- eval.schema.json: params keys are checked ------------------------------------------------
def test_a_misspelled_key_under_params_is_a_config_error(tmp_path: Path) -> None:
    # bug: unknown keys under params accepted (a typo silently sends no temperature)
    cfg = config(tmp_path, "  - id: a\n    provider: mock\n    params: {temprature: 0.2}")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    message = str(info.value)
    assert "eval.yaml:5:" in message and "models[0].params" in message
    assert "unknown key 'temprature'" in message and "did you mean 'temperature'" in message
    # provider-specific fields have their place: params.extra is passed through unchecked
    ok = config(tmp_path, "  - {id: a, provider: mock, params: {extra: {seed: 7, x: 1}}}")
    assert load_config(ok).models[0].params == {"extra": {"seed": 7, "x": 1}}


# -- api.py: stored errors are redacted whatever the provider --------------------------------
def test_a_provider_error_holding_a_secret_is_stored_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bug: the engine's redact hook dropped; the HTTP provider redacts on its own, so a test
    # through it cannot see it: this provider echoes the key in its error as a buggy one would
    secret = "s3cr3t-value-for-the-redaction-test"
    monkeypatch.setenv("ACME_API_KEY", secret)
    Counting.behaviour["c0"] = ProviderError(f"bad key {secret} refused", retryable=False)
    cfg = config(tmp_path, "  - {id: a, provider: counting}", 1)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    (row,) = stored(tmp_path / "out", "SELECT error FROM cases")
    assert secret not in row["error"] and "***" in row["error"] and "refused" in row["error"]
    raw = (tmp_path / "out" / "warehouse.duckdb").read_bytes()
    assert secret.encode() not in raw


# -- cli/runs.py: `show --json` keeps every key the docs name --------------------------------
def test_show_json_has_every_documented_key_even_when_empty(
    quickstart: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # bug: `show --json` dropping empty keys (`cases` without --failures) that docs/cli.md names
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    sentence = re.search(r"`show` gives (.*?);", text, re.DOTALL)
    assert sentence, "docs/cli.md no longer says what `show --json` gives"
    documented = re.findall(r"`(\w+)`", sentence.group(1))
    assert {"run", "totals", "summary", "criteria", "gate", "cases"} <= set(documented)
    out = tmp_path / "out"
    evalwh.run_eval(quickstart, output_dir=out)
    code, stdout, _ = evalwh_inprocess(capsys, "show", "--json", "-o", str(out))
    assert code == 0
    data = json.loads(stdout)
    assert set(documented) <= set(data), set(documented) - set(data)
    assert data["cases"] == [] and data["totals"]["n"] == 48 and data["summary"]


# -- sql/calibration_pointwise.sql: the pointwise kappa against a hand computation -----------
def test_pointwise_kappa_matches_a_hand_computed_fixture(tmp_path: Path) -> None:
    # bug: half of the chance-agreement term dropped (only the pairwise kappa was checked)
    # 10 labelled cases of criterion 'j', (human, judge): pass-pass 6, pass-fail 1,
    # fail-pass 2, fail-fail 1. n = 10, agreement po = 7/10, human yes 7, judge yes 8,
    # chance pe = (7*8 + 3*2) / 100 = 0.62, kappa = (0.70 - 0.62) / (1 - 0.62) = 0.2105...,
    # base rate = max(7, 3) / 10 = 0.7. Criterion 'n' has numeric labels (1..5 scale):
    # (raw, human) (3, 3) (4, 3) (4, 2) (2.6, 3) (2, 2), and (None, 4) without a raw score:
    # n_numeric 5, exact 3/5 (round(2.6) = 3), within 1 4/5.
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        pass
    con = duckdb.connect(str(path))
    pairs = [(True, True)] * 6 + [(True, False)] + [(False, True)] * 2 + [(False, False)]
    numeric = [(3.0, 3), (4.0, 3), (4.0, 2), (2.6, 3), (2.0, 2), (None, 4)]
    insert_score = (
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, score, "
        "passed, weight, required, judge_model, raw_score) "
        "VALUES ('r', 'v', 'm', ?, 0, ?, 'llm-judge', 0.5, ?, 1, true, 'jm', ?)"
    )
    for i, (human, judge) in enumerate(pairs):
        con.execute(insert_score, [f"b{i}", "j", judge, None])
        label = json.dumps("pass" if human else "fail")
        con.execute(
            "INSERT INTO labels VALUES ('r', 'pointwise', NULL, ?, NULL, ?, NULL)", [f"b{i}", label]
        )
    for i, (raw, human) in enumerate(numeric):
        con.execute(insert_score, [f"n{i}", "n", raw is not None and raw >= 3, raw])
        con.execute(
            "INSERT INTO labels VALUES ('r', 'pointwise', NULL, ?, NULL, ?, NULL)",
            [f"n{i}", json.dumps(human)],
        )
    # criterion 'u': every label and verdict 'pass', so chance agreement is 1: kappa undefined
    for i in range(2):
        con.execute(insert_score, [f"u{i}", "u", True, None])
        con.execute(
            "INSERT INTO labels VALUES ('r', 'pointwise', NULL, ?, NULL, '\"pass\"', NULL)",
            [f"u{i}"],
        )
    # an unlabelled case and a scorer error are left out
    con.execute(insert_score, ["u", "j", True, None])
    con.execute(insert_score, ["e", "j", False, None])
    con.execute("UPDATE scores SET error = 'judge failed' WHERE case_id = 'e'")
    con.execute("INSERT INTO labels VALUES ('r', 'pointwise', NULL, 'e', NULL, '\"pass\"', NULL)")
    rows = {
        r["criterion"]: r
        for r in queries.run_query(con, "calibration_pointwise", run_id="r").to_pylist()
    }
    j = rows["j"]
    assert j["n_labels"] == 10
    assert j["agreement"] == pytest.approx(0.7)
    assert j["base_rate"] == pytest.approx(0.7)
    assert j["kappa"] == pytest.approx((0.70 - 0.62) / (1 - 0.62))
    assert pytest.approx(0.2105263, abs=1e-7) == (0.70 - 0.62) / (1 - 0.62)
    u = rows["u"]
    assert (u["n_labels"], u["agreement"], u["kappa"]) == (2, 1.0, None)  # not NaN
    n = rows["n"]
    assert n["n_labels"] == 0 and n["kappa"] is None  # numbers are not pass/fail labels
    assert n["n_numeric"] == 5
    assert n["exact_agreement"] == pytest.approx(0.6)
    assert n["within_1_agreement"] == pytest.approx(0.8)
