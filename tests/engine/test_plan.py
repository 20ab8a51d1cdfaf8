"""What a run sets out to do (evalwh/engine/plan.py): the filters and the shards that select its
cells, the cells of a plan in order, and a request's identity, body, scope and hash (the key of
the cache and of resume: pinned, as a change re-asks and bills every stored request)."""

from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh import load_config
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
from evalwh.errors import UsageError
from tests.builders import (
    DATASOURCE_HEAD,
    PLACE_OUTPUT,
    PLACE_SCHEMA,
    Counting,
    place_config,
    stored,
)
from tests.builders import eval_config as config
from tests.conftest import run_cli, write
from tests.fakes.servers import FakeLLMServer, reply


# -- engine/plan.py: model params are part of a request's identity ---------------------------
@pytest.mark.usefixtures("counting")
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


def test_filters_and_repeats(quickstart: Path, tmp_path: Path) -> None:
    result = evalwh.run_eval(
        quickstart,
        models=["mock-large"],
        variants=["ter*"],
        cases=["geo-1", "math-*"],
        repeat=2,
        output_dir=tmp_path / "out",
    )
    assert [(r["variant"], r["model"], r["n"]) for r in result.summary] == [
        ("terse", "mock-large", 14)
    ]


def test_unknown_filter_is_a_usage_error(quickstart: Path, tmp_path: Path) -> None:
    from evalwh.errors import UsageError

    with pytest.raises(UsageError, match="--model nope matches no model"):
        evalwh.run_eval(quickstart, models=["nope"], output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_sharded_datasource_run_is_refused_before_the_source_is_read(
    tmp_path: Path, sources: Any
) -> None:
    """--shard over a datasource: every shard would read the whole live source again, and a
    shard started again skips stored cells (a resume): refused, exit 2, nothing read or
    created. The same config's file cases alone still shard."""
    from evalwh.errors import UsageError

    static = "  - {id: a, vars: {q: x}, expected: x}\n  - {id: b, vars: {q: y}, expected: y}\n"
    cfg = write(
        tmp_path / "eval.yaml",
        DATASOURCE_HEAD
        + 'cases:\n  - {source: "mysources:Counting", params: {n: 5, page: 2}}\n'
        + static,
    )
    done = run_cli(
        "-o",
        str(tmp_path / "o"),
        "run",
        str(cfg),
        "--shard",
        "1/2",
        "--run-id",
        "nightly",
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert "--shard cannot split" in done.stderr and "mysources:Counting" in done.stderr
    with pytest.raises(UsageError, match="--shard cannot split") as caught:
        evalwh.run_eval(cfg, output_dir=tmp_path / "o", shard=(2, 2), run_id="nightly")
    assert caught.value.exit_code == 2
    assert sources.STATE["calls"] == []  # the source was never read
    assert not (tmp_path / "o" / "warehouse.duckdb").exists()  # no run was created
    plain = write(tmp_path / "plain.yaml", DATASOURCE_HEAD + "cases:\n" + static)
    whole = evalwh.run_eval(plain, output_dir=tmp_path / "o", shard=(1, 1), run_id="nightly")
    assert whole.concluded and whole.totals["n"] == 2 and whole.status == "completed"


def test_build_plan_refuses_a_shard_of_a_datasource_config(tmp_path: Path, sources: Any) -> None:
    from evalwh.config.loader import load_config
    from evalwh.engine.plan import Filters, build_plan
    from evalwh.errors import UsageError

    cfg = load_config(
        write(
            tmp_path / "eval.yaml",
            DATASOURCE_HEAD
            + "cases:\n"
            + '  - {source: "mysources:Counting", params: {n: 5, page: 2}}\n'
            + '  - {source: "mysources:Broken"}\n',
        )
    )
    assert build_plan(cfg, Filters()).streaming is False  # no reads opened: nothing streams
    with pytest.raises(UsageError) as info:
        build_plan(cfg, Filters(shard=(1, 2)))
    assert str(info.value) == (
        f"{cfg.path}: --shard cannot split a run whose cases come from a datasource "
        "(mysources:Counting, mysources:Broken): every shard would read the whole source "
        "again, and a shard started again would resume it, which a datasource run never "
        "does. Run it unsharded, or export the source to a case file (file: cases.jsonl) "
        "and shard that"
    )
    with pytest.raises(UsageError, match="--shard cannot split"):
        build_plan(cfg, Filters(shard=(1, 1)), sources=["opened"])


def test_the_shard_of_a_case_is_a_stable_hash_that_splits_every_case_once() -> None:
    # pinned: a change of hash would send a case to another machine mid-run
    assert [shard_of(f"c{i:05d}", 8) for i in range(8)] == [8, 1, 1, 5, 6, 7, 6, 6]
    ids = [f"c{i:05d}" for i in range(4000)]
    counts = [sum(1 for c in ids if shard_of(c, 4) == k) for k in (1, 2, 3, 4)]
    assert sum(counts) == 4000 and min(counts) > 800  # each case once, roughly balanced
    assert {shard_of(c, 1) for c in ids} == {1}


def test_the_schema_is_part_of_the_request_hash(tmp_path: Path) -> None:
    """The bug it names: an answer cached without a schema served to a request with one."""
    model = '{id: m, provider: mock, mock: {default: \'{"city": "Rome"}\'}}'
    plain = place_config(tmp_path / "a", model)
    asked = place_config(tmp_path / "b", model, PLACE_OUTPUT)
    other = place_config(tmp_path / "c", model, PLACE_OUTPUT.replace('"city"', '"town"'))
    out = tmp_path / "out"
    first = evalwh.run_eval(plain, output_dir=out)
    second = evalwh.run_eval(asked, output_dir=out)
    third = evalwh.run_eval(other, output_dir=out)
    again = evalwh.run_eval(asked, output_dir=out)
    assert first.stats["requests"] == second.stats["requests"] == third.stats["requests"] == 2
    assert again.stats["cache_hits"] == 2


def test_requests_differing_only_in_output_schema_hash_apart() -> None:
    """The bug it names: the schema hashed through an attachment digest that is gone (issue 16
    took it out), so an OpenAI request (whose scope is otherwise empty) with schema A and one
    with schema B shared a hash. The schema and its mode are in the request's scope."""
    from evalwh.config.model import ModelSpec
    from evalwh.config.outputs import OutputSpec
    from evalwh.engine.plan import model_identity, request_hash, request_scope

    model = ModelSpec(id="m", provider="openai", model="gpt-4o-mini")
    messages = [{"role": "user", "content": [{"type": "text", "text": "Where?"}]}]
    a = OutputSpec(schema=PLACE_SCHEMA)
    b = OutputSpec(schema={**PLACE_SCHEMA, "required": []})

    def key(output: OutputSpec | None) -> str:
        scope = request_scope(model, "v", "c1", output)
        return request_hash(model_identity(model), messages, 0, scope=scope)

    keys = [key(None), key(a), key(b), key(OutputSpec(schema=PLACE_SCHEMA, mode="prompted"))]
    assert len(set(keys)) == 4
    assert key(a) == key(OutputSpec(schema=dict(PLACE_SCHEMA)))  # the same schema: the same key
    assert request_scope(model, "v", "c1") == ""  # no schema: other providers' keys unchanged


def test_an_answer_to_one_schema_is_not_served_to_another(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end on the fake OpenAI server: the same prompt with another schema is sent
    again (no shared cache entry), the same schema a second time is a cache hit."""
    monkeypatch.setenv("OPENAI_API_KEY", "k-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    out = tmp_path / "out"
    first = place_config(tmp_path / "a", model, PLACE_OUTPUT)
    other = place_config(tmp_path / "b", model, PLACE_OUTPUT.replace('"city"', '"town"'))
    one = evalwh.run_eval(first, output_dir=out)
    two = evalwh.run_eval(other, output_dir=out)
    again = evalwh.run_eval(first, output_dir=out)
    assert (one.stats["requests"], two.stats["requests"]) == (2, 2)
    assert server.count == 4
    assert [r.body["response_format"]["json_schema"]["schema"] for r in server.requests[2:]] == [
        json.loads(json.dumps(PLACE_SCHEMA).replace('"city"', '"town"'))
    ] * 2
    assert (again.stats["requests"], again.stats["cache_hits"]) == (0, 2)
    con = duckdb.connect(str(out / "warehouse.duckdb"), read_only=True)
    try:
        # one entry per (case, schema): 2 cases x 2 schemas, none shared
        assert con.execute(
            "SELECT count(*), count(DISTINCT request_hash) FROM response_cache"
        ).fetchone() == (4, 4)
    finally:
        con.close()
