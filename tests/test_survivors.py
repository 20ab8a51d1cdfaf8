"""Tests for realistic one-line bugs that once survived the whole suite (issue 21's mutation
survey): each test names the bug it catches. The threshold-boundary ones are in
test_boundaries.py.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pytest

import evalwh
from evalwh import load_config, providers
from evalwh.config.model import EvalConfig, ModelSpec
from evalwh.engine.plan import (
    Filters,
    Plan,
    build_plan,
    model_identity,
    request_body,
    request_hash,
    request_scope,
    shard_of,
)
from evalwh.errors import ConfigError, UsageError
from evalwh.providers.base import Completion, ProviderError, Request
from evalwh.warehouse import connect, queries
from tests.conftest import ROOT, write
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


def test_a_pairwise_judges_error_holding_a_secret_is_stored_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a pair's error is stored as the engine wrote it (no second redaction on its way, as the
    # cases' errors have): the engine's redact hook is all that keeps the key out (the key is
    # in this config's text only to make the judge fail with it)
    secret = "s3cr3t-value-for-the-pairs-test"  # pragma: allowlist secret
    monkeypatch.setenv("ACME_API_KEY", secret)
    cfg = write(
        tmp_path / "eval.yaml",
        "models:\n  - {id: base, provider: mock, mock: {default: a}}\n"
        "  - {id: cand, provider: mock, mock: {default: b}}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: q}]}\n"
        "cases:\n  - {id: c1}\n"
        "judges:\n  - id: j\n    model: {id: j, provider: mock, max_retries: 0, mock: {rules: "
        f"[{{error: 'bad key {secret} refused'}}]}}}}\n"
        "scorecard:\n  - {name: any, type: contains, value: a, required: false}\n"
        "pairwise:\n  - {name: cmp, judge: j, baseline: {model: base}, candidate: {model: cand}}\n",
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    (row,) = stored(tmp_path / "out", "SELECT error FROM pairs")
    assert row["error"] == (
        "judge call failed: mock: bad key *** refused; judge call failed: mock: bad key *** refused"
    )


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
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
            "VALUES ('r', 'pointwise', NULL, ?, NULL, ?, NULL)",
            [f"b{i}", label],
        )
    for i, (raw, human) in enumerate(numeric):
        con.execute(insert_score, [f"n{i}", "n", raw is not None and raw >= 3, raw])
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
            "VALUES ('r', 'pointwise', NULL, ?, NULL, ?, NULL)",
            [f"n{i}", json.dumps(human)],
        )
    # criterion 'u': every label and verdict 'pass', so chance agreement is 1: kappa undefined
    for i in range(2):
        con.execute(insert_score, [f"u{i}", "u", True, None])
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
            "VALUES ('r', 'pointwise', NULL, ?, NULL, '\"pass\"', NULL)",
            [f"u{i}"],
        )
    # an unlabelled case and a scorer error are left out
    con.execute(insert_score, ["u", "j", True, None])
    con.execute(insert_score, ["e", "j", False, None])
    con.execute("UPDATE scores SET error = 'judge failed' WHERE case_id = 'e'")
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
        "VALUES ('r', 'pointwise', NULL, 'e', NULL, '\"pass\"', NULL)"
    )
    rows = {
        r["criterion"]: r
        for r in queries.run_query(
            con, "calibration_pointwise", run_id="r", within=1.0, key=None
        ).to_pylist()
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


# -- engine/plan.py: what a run sets out to do, and the key of the cache ----------------------
def _plan_config(tmp_path: Path) -> EvalConfig:
    """Variants v1, v2; models a, b; 25 cases c00..c24 (more than the 20 an error names)."""
    cases = "\n".join(f"  - {{id: c{i:02d}, vars: {{q: '{i}'}}}}" for i in range(25))
    return load_config(
        write(
            tmp_path / "eval.yaml",
            "models: [{id: a, provider: mock}, {id: b, provider: mock}]\n"
            "variants:\n"
            '  - {id: v1, messages: [{role: user, content: "{{ q }}"}]}\n'
            '  - {id: v2, messages: [{role: user, content: "Say {{ q }}"}]}\n'
            f"cases:\n{cases}\n"
            "scorecard: [{name: exact, type: exact}]\n",
        )
    )


def _axes(plan: Plan) -> tuple[list[str], list[str], list[str]]:
    return (
        [v.variant.id for v in plan.variants],
        [m.id for m in plan.models],
        [c.id for c in plan.cases],
    )


def test_a_runs_filters_are_recorded_without_empty_axes_and_with_the_shard_count() -> None:
    # what runs.filters holds (`evalwh show`, and the check that a resumed shard belongs to
    # the same split): the patterns given, and n of a k-of-n shard (each shard stores its k)
    assert Filters().to_dict() == {}
    filters = Filters(models=("a",), cases=("c1*", "c2"), shard=(2, 3))
    assert filters.to_dict() == {"models": ["a"], "cases": ["c1*", "c2"], "shards": 3}


def test_filters_select_by_glob_in_config_order(tmp_path: Path) -> None:
    cfg = _plan_config(tmp_path)
    whole = build_plan(cfg, Filters())
    assert _axes(whole) == (["v1", "v2"], ["a", "b"], [f"c{i:02d}" for i in range(25)])
    assert (whole.repeats, whole.size, whole.planned, whole.run_size) == (1, 100, 100, None)
    assert (whole.skip, whole.only, whole.sources, whole.streaming) == (set(), None, [], False)
    assert whole.config is cfg and whole.case_patterns == ()

    filters = Filters(models=("b", "a"), variants=("v2",), cases=("c2?", "c03"))
    plan = build_plan(cfg, filters, 3)
    # the config's order, not the filter's; a pattern is a glob, matched case by case
    assert _axes(plan) == (["v2"], ["a", "b"], ["c03", "c20", "c21", "c22", "c23", "c24"])
    assert (plan.repeats, plan.size, plan.planned) == (3, 36, 36)
    assert plan.case_patterns == ("c2?", "c03")


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (
            Filters(models=("a", "B", "z*")),
            "--model B, z* matches no model in the config (known: a, b)",
        ),
        (
            Filters(variants=("v3",)),
            "--variant v3 matches no variant in the config (known: v1, v2)",
        ),
        (
            Filters(cases=("c0*", "C01", "x")),
            "--case C01, x matches no case in the config (known: "
            + ", ".join(f"c{i:02d}" for i in range(20))
            + ")",
        ),
    ],
)
def test_a_filter_matching_nothing_names_it_and_the_known_ids(
    tmp_path: Path, filters: Filters, message: str
) -> None:
    # bugs: the known list empty or cut at 21; a glob matched without case (C01 is not c01)
    with pytest.raises(UsageError) as info:
        build_plan(_plan_config(tmp_path), filters)
    assert str(info.value) == message


def test_a_case_filter_waits_for_a_datasources_cases(tmp_path: Path) -> None:
    # with a datasource opened, a --case pattern may match cases still to come: no error here,
    # and the pattern goes with the plan to be applied as they come
    plan = build_plan(_plan_config(tmp_path), Filters(cases=("s-*", "c1?")), sources=["opened"])
    assert [c.id for c in plan.cases] == [f"c1{i}" for i in range(10)]
    assert plan.case_patterns == ("s-*", "c1?") and plan.sources == ["opened"]
    assert plan.streaming is True


def test_repeat_must_be_at_least_one(tmp_path: Path) -> None:
    cfg = _plan_config(tmp_path)
    assert build_plan(cfg, Filters(), 1).repeats == 1
    with pytest.raises(UsageError) as info:
        build_plan(cfg, Filters(), 0)
    assert str(info.value) == "--repeat must be at least 1"


def test_a_shard_plans_its_own_cases_and_counts_the_whole_run(tmp_path: Path) -> None:
    # bugs: the run's size computed from the shard's cases (a resumed shard then thinks the
    # run is done), or the shard keeps the other shards' cases
    cfg = _plan_config(tmp_path)
    seen: list[str] = []
    for k in (1, 2, 3):
        plan = build_plan(cfg, Filters(shard=(k, 3)), 2)
        ids = [c.id for c in plan.cases]
        assert ids == [c.id for c in cfg.cases if shard_of(c.id, 3) == k] and ids
        assert (plan.run_size, plan.planned, plan.size) == (200, 200, 2 * 2 * len(ids) * 2)
        seen += ids
    assert sorted(seen) == [c.id for c in cfg.cases]


def test_a_plan_yields_one_models_cells_case_major_minus_skip_and_only(tmp_path: Path) -> None:
    cfg = _plan_config(tmp_path)
    skip = {("v1", "a", "c00", 1), ("v2", "b", "c00", 0)}
    plan = build_plan(cfg, Filters(cases=("c00", "c01")), 2, skip=skip)
    model_a, model_b = plan.models
    cells = [(v.variant.id, c.id, r) for v, c, r in plan.cells(model_a)]
    assert cells == [
        ("v1", "c00", 0),
        ("v2", "c00", 0),
        ("v2", "c00", 1),
        ("v1", "c01", 0),
        ("v1", "c01", 1),
        ("v2", "c01", 0),
        ("v2", "c01", 1),
    ]
    # `only` (retrying the errors) keeps just its cells, and a stored one is still skipped
    only = {("v2", "b", "c01", 1), ("v2", "b", "c00", 0), ("v1", "a", "c00", 0)}
    plan = build_plan(cfg, Filters(cases=("c00", "c01")), 2, skip=skip, only=only)
    assert [(v.variant.id, c.id, r) for v, c, r in plan.cells(model_b)] == [("v2", "c01", 1)]
    assert plan.wanted(("v1", "a", "c00", 0)) and not plan.wanted(("v1", "a", "c01", 0))


def test_a_request_identity_is_canonical_json_of_what_is_asked() -> None:
    # bugs: headers or the key's variable name in the identity (a rotated key empties the
    # cache), or a real option left out; keys unsorted; a YAML date in options fails
    model = ModelSpec(
        id="name-only",
        provider="openai",
        model="gpt-4o",
        params={"temperature": 0.5, "max_tokens": 10},
        options={
            "headers": {"X-Org": "o"},
            "api_key_env": "K",
            "base_url": "http://127.0.0.1:9",
            "since": datetime.date(2026, 1, 2),
        },
    )
    assert model_identity(model) == (
        '{"model":"gpt-4o","options":{"base_url":"http://127.0.0.1:9","since":"2026-01-02"},'
        '"params":{"max_tokens":10,"temperature":0.5},"provider":"openai"}'
    )


def test_the_request_hash_is_pinned() -> None:
    # The cache and resume key on this hash: any change to how it is computed silently
    # re-asks every stored request (and bills it). Pinned: sha256 of identity, NUL, the
    # messages as sorted compact JSON (UTF-8, not escaped), NUL NUL repeat, NUL scope.
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": 'Quelle est la capitale ? "Paris" é'},
                {
                    "type": "image",
                    "name": "p.png",
                    "sha256": "ab",
                    "media_type": "image/png",
                    "bytes": 3,
                },
            ],
        }
    ]
    body = request_body(messages)
    assert body == (
        '[{"content":[{"text":"Quelle est la capitale ? \\"Paris\\" é","type":"text"},'
        '{"bytes":3,"media_type":"image/png","name":"p.png","sha256":"ab","type":"image"}],'
        '"role":"user"}]'
    )
    assert body == json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # a long conversation: json's C encoder hands the text back in several chunks
    long = [{"role": "user", "content": f"turn {i}"} for i in range(20000)]
    assert request_body(long) == json.dumps(long, sort_keys=True, separators=(",", ":"))
    identity = '{"model":"m","provider":"p"}'
    expected = hashlib.sha256(f"{identity}\x00{body}\x00\x002".encode()).hexdigest()
    assert request_hash(identity, messages, 2) == expected
    assert expected == "36d7f42219579629d830e82df5332250a386d6c57050611bd63a553b71e909b6"
    scoped = hashlib.sha256(f"{identity}\x00{body}\x00\x002\x00s".encode()).hexdigest()
    assert request_hash(identity, messages, 2, scope="s") == scoped
    assert request_hash(identity, messages, 2, body=body, scope="s") == scoped


def test_a_request_scope_separates_mock_cases_and_output_schemas() -> None:
    mock = ModelSpec(id="m", provider="mock", model="mock")
    other = ModelSpec(id="o", provider="openai", model="gpt")
    assert request_scope(mock, "v", "c1") == "v\x00c1"
    assert request_scope(other, "v", "c1") == ""


def test_the_request_body_encoder_writes_what_json_dumps_writes() -> None:
    """plan._body_encoder() builds the encoder once at import; called here directly so a
    mutant of it is live (mutmut switches mutants after import)."""
    import json as _json

    from evalwh.engine.plan import _body_encoder

    encode = _body_encoder()
    messages = [
        {"role": "user", "content": 'Grüße — 日本語 "quoted" \\ back\nline', "b": 1, "a": None},
        {"z": [1, 2.5, True, False], "m": {"y": "2", "x": [{"k": "v"}]}},
    ]
    expected = _json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert encode(messages) == expected
    assert encode({"b": 1, "a": 2}) == '{"a":2,"b":1}'
    # a long conversation comes out of the C encoder in several pieces, joined with nothing
    long = [{"role": "user", "content": "x" * 10}] * 20_000
    assert encode(long) == _json.dumps(long, sort_keys=True, separators=(",", ":"))


def test_a_cases_shard_is_pinned_across_versions() -> None:
    """Shards are assigned from sha256 of the id: a change would move cases between the
    processes of a sharded run resumed after an upgrade."""
    from evalwh.engine.plan import shard_of

    assert [shard_of(f"case-{i}", 7) for i in range(10)] == [1, 1, 3, 3, 4, 2, 7, 6, 3, 4]
    assert [shard_of(f"case-{i}", 1000) for i in range(4)] == [808, 967, 520, 732]


def test_the_warehouse_json_encoder_writes_what_json_dumps_writes() -> None:
    """writer._json_encoder() builds the encoder once at import; called here directly so a
    mutant of it is live (mutmut switches mutants after import)."""
    from evalwh.warehouse.writer import _json_encoder

    encode = _json_encoder()
    when = datetime.date(2026, 1, 2)
    value = {"b": [1, 2.5, True, None], "a": 'Grüße "q" \\ 日本\n', "when": when, "n": {"x": {}}}
    assert encode(value) == json.dumps(value, ensure_ascii=False, default=str)
    assert encode(value) == (
        '{"b": [1, 2.5, true, null], "a": "Grüße \\"q\\" \\\\ 日本\\n", '
        '"when": "2026-01-02", "n": {"x": {}}}'
    )  # insertion order kept, ", " and ": " separators, non-ASCII as is, str() for the rest
    assert encode("plain\t") == '"plain\\t"' and encode(3) == "3" and encode(None) == "null"
    long = [{"k": "x" * 10}] * 20_000  # several chunks from the C encoder, joined with nothing
    assert encode(long) == json.dumps(long, ensure_ascii=False)
    # json.dumps's checks are kept: NaN and infinities as JSON5 words, a cycle and a key
    # that is no JSON key are errors (a scorer's details can hold any of these)
    assert encode([math.nan, math.inf, -math.inf]) == "[NaN, Infinity, -Infinity]"
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match=r"^Circular reference detected$"):
        encode(cycle)
    with pytest.raises(TypeError, match="keys must be str, int, float, bool or None"):
        encode({(1, 2): "tuple key"})


def test_the_warehouse_json_encoder_without_the_c_accelerator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Python built without _json gets json's own encoder, with the same output."""
    import json.encoder

    from evalwh.warehouse.writer import _json_encoder

    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    encode = _json_encoder()
    value = {"a": "Grüße 日本", "when": datetime.date(2026, 1, 2), "n": [1, None]}
    assert encode(value) == '{"a": "Grüße 日本", "when": "2026-01-02", "n": [1, null]}'


def test_a_query_file_header_is_parsed_from_its_leading_comments() -> None:
    """queries._parse() runs once per file, before mutmut switches mutants: called here."""
    from evalwh.warehouse.queries import _parse, _strip_comments, registry

    text = (
        "-- title:  Pass rate  \n"
        "--description: per cell\n"
        "-- params: run_id, limit ,\n"
        "\n"
        "-- a note: $ignored here\n"
        "SELECT * FROM cases WHERE run_id = $run_id -- not $this\n"
        "LIMIT $limit  -- title: not a header after SQL\n"
    )
    query = _parse("demo", text)
    assert (query.name, query.title, query.description) == ("demo", "Pass rate", "per cell")
    assert query.params == ("run_id", "limit") and query.sql == text
    assert _strip_comments("a -- b\n-- c\nd") == "a \n\nd"
    assert _strip_comments("a -- b -- c") == "a "  # from the first "--" on
    # a blank line or another comment between the header lines does not end the header
    spaced = _parse("s", "-- title: t\n\n-- a note\n-- description: d\nSELECT 1\n")
    assert (spaced.title, spaced.description) == ("t", "d")
    with pytest.raises(ValueError) as missing:
        _parse("bare", "-- title: t\nSELECT 1\n-- description: too late\n")
    assert str(missing.value) == (
        "sql/bare.sql must start with '-- title:' and '-- description:' lines"
    )
    with pytest.raises(ValueError) as undeclared:
        _parse("p", "-- title: t\n-- description: d\nSELECT $a, $b\n")
    assert str(undeclared.value) == "sql/p.sql declares params () but uses ('a', 'b')"
    with pytest.raises(ValueError, match=r"declares params \('a', 'c'\) but uses \('a',\)"):
        _parse("p", "-- title: t\n-- description: d\n-- params: a, c\nSELECT $a, $a\n")
    # every shipped query parses to what the registry holds
    for name, held in registry().items():
        assert _parse(name, held.sql) == held
