"""Importing promptfoo results and inspect_ai logs: the real fixture files import with the
expected counts, twice adds nothing, unknown fields are kept, secrets are masked, and compare
works across tools. Hand-made logs pin each branch of the mapping and the archive bounds."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh import api
from evalwh.errors import ConfigError, UsageError
from evalwh.importers import evalzip
from evalwh.importers.inspectlog import to_float
from tests.conftest import run_cli

# ../shared beside the checkout (CI and the main checkout); a worktree sits one level deeper
PEERS = next(
    (
        p / "shared" / "fixtures" / "peers"
        for p in Path(__file__).resolve().parents[2:4]
        if (p / "shared" / "fixtures" / "peers").is_dir()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "peers",
)
needs_peers = pytest.mark.skipif(
    not PEERS.is_dir(), reason=f"the peer fixtures ({PEERS}) are not beside the checkout"
)
PROMPTFOO = PEERS / "promptfoo-results.json"


def inspect_log(kind: str) -> Path:
    return next(p for p in sorted(PEERS.glob(f"2026-*.{kind}")))


def rows(wh: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(wh), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


@needs_peers
def test_promptfoo_fixture_imports_with_expected_counts(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    [done] = api.import_results("promptfoo", [PROMPTFOO], warehouse=wh, label="pf")
    assert (done["added"], done["n_cases"], done["n_scores"]) == (True, 24, 46)
    assert rows(wh, "SELECT suite, label, status, source_tool, source_version FROM runs") == [
        ("fixture suite", "pf", "completed", "promptfoo", "0.123.1")
    ]
    # 2 prompts x 2 providers x 6 tests; 15 passed, 8 failed their assertions, 1 API error
    counts = rows(
        wh,
        "SELECT count(*), count(*) FILTER (passed), count(error), "
        "count(DISTINCT variant), count(DISTINCT model), sum(input_tokens), sum(output_tokens) "
        "FROM cases",
    )
    assert counts == [(24, 15, 1, 2, 2, 320, 265)]
    [(error, kind, output)] = rows(
        wh, "SELECT error, error_kind, output FROM cases WHERE error IS NOT NULL"
    )
    assert "500 Internal Server Error" in error and kind == "provider" and output is None
    # an assertion failure is a graded answer, not an error
    assert rows(
        wh, "SELECT count(*) FROM cases WHERE NOT passed AND error IS NULL AND score = 0.5"
    ) == [(8,)]
    # unknown fields kept: promptfoo's own result id and the HTTP metadata of the reply
    [(extra,)] = rows(wh, "SELECT extra FROM cases WHERE case_id = 'test-1' LIMIT 1")
    assert set(json.loads(extra)) >= {"id", "metadata", "assert", "promptId"}
    [(source,)] = rows(wh, "SELECT source_extra FROM runs")
    source_extra = json.loads(source)
    assert source_extra["evalId"] == "eval-C5b-2026-11-30T14:01:15"
    assert source_extra["results"]["stats"]["successes"] == 15


@needs_peers
@pytest.mark.parametrize("kind", ["eval", "json"])
def test_inspect_fixture_logs_import_with_expected_counts(tmp_path: Path, kind: str) -> None:
    wh = tmp_path / "w.duckdb"
    [done] = api.import_results("inspect", [inspect_log(kind)], warehouse=wh)
    assert (done["n_cases"], done["n_scores"], done["version"]) == (6, 12, "0.3.285")
    assert rows(wh, "SELECT suite, status, source_tool FROM runs") == [
        ("fixture", "completed", "inspect")
    ]
    got = rows(
        wh,
        "SELECT case_id, passed, score, output_tokens, metadata ->> 'topic', expected "
        "FROM cases ORDER BY case_id",
    )
    assert [g[0] for g in got] == ["s0", "s1", "s2", "s3", "s4", "s5"]
    assert [g[1] for g in got] == [False, True, True, True, False, True]  # 4 of 6, as inspect
    assert got[0][3:] == (11, "geography", '"absent-word"')
    assert rows(wh, "SELECT DISTINCT criterion, scorer FROM scores ORDER BY 1") == [
        ("includes", "inspect:includes"),
        ("match", "inspect:match"),
    ]


@needs_peers
def test_importing_the_same_file_twice_adds_nothing(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    first = api.import_results("promptfoo", [PROMPTFOO], warehouse=wh)[0]
    again = api.import_results("promptfoo", [PROMPTFOO], warehouse=wh, label="other")[0]
    assert again["added"] is False and again["run_id"] == first["run_id"]
    assert rows(wh, "SELECT count(*) FROM runs") == [(1,)]
    assert rows(wh, "SELECT count(*) FROM cases") == [(24,)]
    # a copy with the same bytes elsewhere is the same content: still nothing
    copy = tmp_path / "copy.json"
    copy.write_bytes(PROMPTFOO.read_bytes())
    assert api.import_results("promptfoo", [copy], warehouse=wh)[0]["added"] is False
    # one changed byte is another file
    copy.write_bytes(PROMPTFOO.read_bytes() + b"\n")
    assert api.import_results("promptfoo", [copy], warehouse=wh)[0]["added"] is True


@needs_peers
def test_imported_config_keeps_no_api_key(tmp_path: Path) -> None:
    """The attack: a results file whose config holds a live key must not put it in the
    warehouse. promptfoo redacts its own copy; a hand-edited one may not be."""
    data = json.loads(PROMPTFOO.read_text())
    data["config"]["providers"][0]["config"]["apiKey"] = "sk-live-" + "x" * 40
    data["config"]["env"] = {"OPENAI_API_KEY": "sk-proj-" + "y" * 40, "region": "eu"}
    leaky = tmp_path / "leaky.json"
    leaky.write_text(json.dumps(data))
    wh = tmp_path / "w.duckdb"
    api.import_results("promptfoo", [leaky], warehouse=wh)
    [(source,)] = rows(wh, "SELECT source_extra FROM runs")
    assert "x" * 40 not in source and "y" * 40 not in source
    env = json.loads(source)["config"]["env"]
    assert env == {"OPENAI_API_KEY": "***", "region": "eu"}  # only the secret-named key
    # token counts are not secrets: "tokenUsage" is kept as it is
    assert json.loads(source)["results"]["stats"]["tokenUsage"]["total"] == 585


@needs_peers
def test_compare_works_across_an_imported_promptfoo_run_and_an_inspect_run(
    tmp_path: Path,
) -> None:
    wh = tmp_path / "w.duckdb"
    api.import_results(
        "promptfoo",
        [PROMPTFOO],
        warehouse=wh,
        label="pf",
        case_id="s{index}",
        variants=["Answer briefly: {{question}}=brief"],
        models=["openai:chat:fake-model=fake-model"],
    )
    api.import_results(
        "inspect", [inspect_log("eval")], warehouse=wh, label="ins",
        variants=["brief"], models=["fake-model"],
    )  # fmt: skip
    view = api.open_warehouse(wh)
    result = view.compare("pf", "ins").to_dict()
    overall = result["overall"]
    # 6 paired cases: promptfoo 3/6 (s2 is its API error) against inspect 4/6
    assert (overall["n"], overall["n_a"], overall["n_b"]) == (6, 24, 6)
    assert (overall["pass_rate_a"], round(overall["pass_rate_b"], 4)) == (0.5, 0.6667)
    moved = {m["case_id"]: m["movement"] for m in result["movers"]}
    assert moved == {"s2": "fixed", "s0": "score down", "s4": "score down"}


@needs_peers
def test_cli_imports_and_says_when_a_file_was_imported_before(tmp_path: Path) -> None:
    args = ("import", "inspect", str(inspect_log("eval")), str(inspect_log("json")))
    first = run_cli(*args, "-o", str(tmp_path), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("imported ") == 2 and "(inspect 0.3.285)" in first.stdout
    again = run_cli(*args, "-o", str(tmp_path), "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert [r["added"] for r in json.loads(again.stdout)["imported"]] == [False, False]
    listed = run_cli("list", "-o", str(tmp_path), "--json", cwd=tmp_path)
    assert len(json.loads(listed.stdout)["runs"]) == 2


def test_cli_refuses_a_file_that_is_not_a_results_file(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    done = run_cli("import", "promptfoo", str(bad), "-o", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert str(bad) in done.stderr and "not a promptfoo results file" in done.stderr
    assert "fix:" in done.stderr
    # nothing was written: no run
    assert not (tmp_path / "warehouse.duckdb").exists() or rows(
        tmp_path / "warehouse.duckdb", "SELECT count(*) FROM runs"
    ) == [(0,)]


# -- hand-made inspect logs: each branch of the mapping ----------------------------------------


def sample(sid: Any, value: Any, **more: Any) -> dict[str, Any]:
    return {
        "id": sid,
        "epoch": more.pop("epoch", 1),
        "input": f"question {sid}",
        "target": "t",
        "output": {"completion": f"answer {sid}", "usage": {"input_tokens": 3, "output_tokens": 4}},
        "scores": {"judge": {"value": value, "explanation": "why"}},
        **more,
    }


def header(status: str = "success") -> dict[str, Any]:
    return {
        "version": 2,
        "status": status,
        "eval": {
            "task": "t1",
            "model": "m1",
            "created": "2026-01-02T03:04:05+00:00",
            "packages": {"inspect_ai": "0.3.999"},
            "future_field": {"kept": True},
        },
        "stats": {"started_at": "2026-01-02T03:04:05+00:00"},
    }


def write_eval(path: Path, head: dict[str, Any] | None, samples: list[dict[str, Any]]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        if head is not None:
            z.writestr("header.json", json.dumps(head))
        else:
            z.writestr("_journal/start.json", json.dumps({k: header()[k] for k in ("eval",)}))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    return path


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("C", 1.0), ("P", 0.5), ("I", 0.0), ("N", 0.0), ("yes", 1.0), ("False", 0.0),
        (True, 1.0), (False, 0.0), (0.25, 0.25), ("0.75", 0.75), (7, 7.0), ("maybe", None),
        ([1], None),
    ],
)  # fmt: skip
def test_inspect_values_convert_as_inspect_does(value: Any, expected: float | None) -> None:
    assert to_float(value) == expected


def test_inspect_scores_clamp_keep_raw_and_pass_only_at_full_marks(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text(
        json.dumps(
            {
                **header(),
                "samples": [
                    sample("a", 1.0),
                    sample("b", 0.999),
                    sample("c", 7),  # a 0-10 scale: clamped to 1, the 7 kept
                    sample("d", {"acc": "C", "style": "I"}),
                    sample("e", "C", error={"message": "boom", "traceback": "..."}),
                    sample("f", "C", epoch=2),
                ],
            }
        )
    )
    wh = tmp_path / "w.duckdb"
    api.import_results("inspect", [log], warehouse=wh)
    got = dict(
        (r[0], r[1:])
        for r in rows(wh, "SELECT case_id || '/' || repeat, passed, score, error FROM cases")
    )
    assert got["a/0"] == (True, 1.0, None)
    assert got["b/0"] == (False, 0.999, None)
    assert got["c/0"] == (True, 1.0, None)
    assert got["d/0"] == (False, 0.5, None)  # mean of the two keys; one failed
    assert got["e/0"] == (False, 1.0, "boom")  # an error never passes
    assert got["f/1"] == (True, 1.0, None)  # epoch 2 is repeat 1
    assert rows(wh, "SELECT raw_score FROM scores WHERE case_id = 'c'") == [(7.0,)]
    assert rows(wh, "SELECT criterion FROM scores WHERE case_id = 'd' ORDER BY 1") == [
        ("judge.acc",),
        ("judge.style",),
    ]
    [(source,)] = rows(wh, "SELECT source_extra FROM runs")
    assert json.loads(source)["eval"]["future_field"] == {"kept": True}


@pytest.mark.parametrize(
    ("status", "stored"),
    [("success", "completed"), ("error", "failed"), ("cancelled", "interrupted")],
)
def test_inspect_status_maps_to_run_status(tmp_path: Path, status: str, stored: str) -> None:
    log = write_eval(tmp_path / "x.eval", header(status), [sample("a", "C")])
    wh = tmp_path / "w.duckdb"
    api.import_results("inspect", [log], warehouse=wh)
    assert rows(wh, "SELECT status FROM runs") == [(stored,)]


def test_an_eval_log_without_a_header_is_an_unfinished_run(tmp_path: Path) -> None:
    log = write_eval(tmp_path / "x.eval", None, [sample("a", "C"), sample("b", "I")])
    wh = tmp_path / "w.duckdb"
    [done] = api.import_results("inspect", [log], warehouse=wh)
    assert done["n_cases"] == 2
    assert rows(wh, "SELECT status FROM runs") == [("interrupted",)]


def test_a_zip_bomb_is_refused_before_decompressing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack: a small .eval whose members inflate to more than the import allows."""
    log = tmp_path / "bomb.eval"
    with zipfile.ZipFile(log, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header()))
        z.writestr("samples/a_epoch_1.json", b"0" * 5000)
    monkeypatch.setattr(evalzip, "MAX_TOTAL_BYTES", 4999)
    with pytest.raises(ConfigError, match="uncompressed"):
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb")
    monkeypatch.setattr(evalzip, "MAX_TOTAL_BYTES", 10**9)
    monkeypatch.setattr(evalzip, "MAX_MEMBER_BYTES", 4999)
    with pytest.raises(ConfigError, match="over the limit"):
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb")


def test_zstd_members_are_read_with_the_pyarrow_codec(tmp_path: Path) -> None:
    """inspect_ai writes zstd members (method 93), which Python's zipfile cannot read."""
    import pyarrow as pa

    body = json.dumps(header()).encode()
    packed = pa.Codec("zstd").compress(body, asbytes=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("header.json", packed)
    raw = bytearray(buf.getvalue())
    # rewrite the member as zstd: method 93 and the true size, in both headers
    for sig, method_at, size_at in ((b"PK\x03\x04", 8, 22), (b"PK\x01\x02", 10, 24)):
        at = raw.index(sig)
        raw[at + method_at : at + method_at + 2] = (93).to_bytes(2, "little")
        raw[at + size_at : at + size_at + 4] = len(body).to_bytes(4, "little")
    path = tmp_path / "z.eval"
    path.write_bytes(bytes(raw))
    with evalzip.EvalZip(path) as z:
        assert z.json("header.json")["eval"]["task"] == "t1"
    path.write_bytes(bytes(raw).replace(packed[8:20], b"\x00" * 12))
    with pytest.raises(ConfigError, match=r"not valid zstd|not JSON"), evalzip.EvalZip(path) as z:
        z.json("header.json")


def test_case_id_template_errors_name_the_field(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text(json.dumps({**header(), "samples": [sample("a", "C", metadata={"k": "v"})]}))
    wh = tmp_path / "w.duckdb"
    with pytest.raises(UsageError, match=r"unknown field \{nope\}"):
        api.import_results("inspect", [log], warehouse=wh, case_id="{nope}")
    with pytest.raises(UsageError, match=r"has no metadata\.other"):
        api.import_results("inspect", [log], warehouse=wh, case_id="{metadata.other}")
    api.import_results("inspect", [log], warehouse=wh, case_id="{metadata.k}-{index}")
    assert rows(wh, "SELECT case_id FROM cases") == [("v-0",)]


def test_a_rename_that_merges_two_cells_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text(json.dumps({**header(), "samples": [sample("a", "C"), sample("b", "C")]}))
    with pytest.raises(UsageError, match="same cell"):
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb", case_id="same")
    assert not (tmp_path / "w.duckdb").exists() or rows(
        tmp_path / "w.duckdb", "SELECT count(*) FROM runs"
    ) == [(0,)]


def test_unknown_tool_and_bad_suffix_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="evalwh imports promptfoo and inspect"):
        api.import_results("langsmith", [tmp_path / "x"], warehouse=tmp_path / "w.duckdb")
    other = tmp_path / "log.txt"
    other.write_text("{}")
    with pytest.raises(ConfigError, match=r"\.eval or \.json"):
        api.import_results("inspect", [other], warehouse=tmp_path / "w.duckdb")


@needs_peers
def test_gate_slices_and_exports_work_on_imported_runs(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    api.import_results("promptfoo", [PROMPTFOO], warehouse=wh, label="pf")
    api.import_results("inspect", [inspect_log("json")], warehouse=wh, label="ins")
    view = api.open_warehouse(wh)
    # slices by the metadata both tools carry
    by_topic = {r["slice"]: r for r in view.slice("ins", "topic").to_dicts() if r.get("slice")}
    assert set(by_topic) >= {"topic=geography", "topic=math", "topic=history"}
    # the gate judges an imported run (no thresholds: nothing fails) against another
    gate = view.gate("ins", baseline="pf")
    assert gate.passed and gate.baseline_id == view.resolve("pf")
    # exports read it like any run
    done = view.export("pf", "junit", out=tmp_path / "pf.xml")
    text = (tmp_path / "pf.xml").read_text()
    assert (
        done is not None and text.count("<testcase") == 24 and "500 Internal Server Error" in text
    )
