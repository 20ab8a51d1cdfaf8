"""Tests that kill mutants mutmut found alive in evalwh/scoring, engine, warehouse and analysis (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import hashlib
import json
import locale
import logging
import re
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.config.model import Case, Criterion, ModelSpec
from evalwh.errors import ConfigError, RunNotFoundError, UsageError
from evalwh.providers.base import ProviderError
from evalwh.scoring.base import ScoreResult
from evalwh.scoring.userfunc import call_function, load_function
from tests.conftest import write
from tests.test_pyworker import serve

FILE = "eval.yaml"
NAMED = "criterion 'py' (python): "


def criterion(function: str, where: str = "scorecard[2]") -> Criterion:
    return Criterion(name="py", type="python", options={"function": function}, where=where)


def load_error(spec: str, root: Path, where: str = "scorecard[2]") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_function(criterion(spec, where), root, FILE)
    return info.value


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# -- scoring/userfunc.py: where the `function` option's errors point, and what they say ------


def test_a_missing_scorer_file_names_the_config_file_and_the_function_option(
    tmp_path: Path,
) -> None:
    error = load_error("gone.py:fn", tmp_path)
    assert error.message == NAMED + f"python file not found: {(tmp_path / 'gone.py').resolve()}"
    assert (error.file, error.where) == (FILE, "scorecard[2].function")


def test_a_file_python_cannot_load_as_a_module_names_the_place_and_the_fix(
    tmp_path: Path,
) -> None:
    write(tmp_path / "sub" / "scorer.txt", "def fn(output, case):\n    return 1\n")
    error = load_error("sub/scorer.txt:fn", tmp_path)
    path = (tmp_path / "sub" / "scorer.txt").resolve()
    assert error.message == NAMED + f"cannot load {path} as a Python module"
    assert (error.file, error.where) == (FILE, "scorecard[2].function")
    assert error.fix == "point `function` at a .py file: path/to/file.py:function"


def test_a_scorer_file_that_fails_to_import_names_the_place(tmp_path: Path) -> None:
    write(tmp_path / "bad.py", "raise RuntimeError('at import')\n")
    error = load_error("bad.py:fn", tmp_path)
    assert (error.file, error.where) == (FILE, "scorecard[2].function")


def test_a_scorer_file_that_drops_itself_from_sys_modules_and_fails_is_a_config_error(
    tmp_path: Path,
) -> None:
    write(tmp_path / "gone.py", "import sys\ndel sys.modules[__name__]\nraise ValueError('boom')\n")
    error = load_error("gone.py:fn", tmp_path)
    path = (tmp_path / "gone.py").resolve()
    assert error.message == NAMED + f"importing {path} failed: ValueError: boom"


def test_a_scorer_file_loads_under_a_module_name_of_its_stem_and_path_digest(
    tmp_path: Path,
) -> None:
    """The module's ``__name__`` (seen in a scorer's own logging) names the file and the
    first 10 hex digits of its path's SHA-1, then a counter."""
    write(tmp_path / "checks" / "my-scorer.py", "def fn(output, case):\n    return 1\n")
    fn, _ = load_function(criterion("checks/my-scorer.py:fn"), tmp_path, FILE)
    path = (tmp_path / "checks" / "my-scorer.py").resolve()
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    assert re.fullmatch(rf"_evalwh_scorer_my_scorer_{digest}_\d+", fn.__module__)


def test_a_scorer_file_imports_modules_beside_it_and_at_the_config_folder(
    tmp_path: Path,
) -> None:
    beside, top = unique("beside"), unique("top")
    write(tmp_path / "sub" / f"{beside}.py", "VALUE = 'b'\n")
    write(tmp_path / f"{top}.py", "VALUE = 't'\n")
    write(
        tmp_path / "sub" / "scorer.py",
        f"import {beside}\nimport {top}\n\n"
        f"def fn(output, case):\n    return output == {beside}.VALUE + {top}.VALUE\n",
    )
    try:
        fn, _ = load_function(criterion("sub/scorer.py:fn"), tmp_path, FILE)
        assert fn("bt", Case(id="a")) is True
    finally:
        sys.modules.pop(beside, None)
        sys.modules.pop(top, None)


def test_module_import_errors_name_the_place_and_the_full_fix(tmp_path: Path) -> None:
    missing = unique("absent_mod")
    error = load_error(f"{missing}:fn", tmp_path)
    assert (error.file, error.where) == (FILE, "scorecard[2].function")
    assert error.fix == (
        f"check the module name; it is imported with the config's folder ({tmp_path}) on "
        "sys.path, or use path/to/file.py:function"
    )
    broken = unique("broken_mod")
    write(tmp_path / f"{broken}.py", "raise RuntimeError('no model')\n")
    try:
        error = load_error(f"{broken}:fn", tmp_path)
    finally:
        sys.modules.pop(broken, None)
    assert error.message == NAMED + f"importing module '{broken}' failed: RuntimeError: no model"
    assert (error.file, error.where) == (FILE, "scorecard[2].function")


@pytest.mark.parametrize("target", ["sub/scorer", "sub\\scorer"])
def test_a_target_with_a_slash_or_backslash_is_a_file_not_a_module(
    tmp_path: Path, target: str
) -> None:
    error = load_error(f"{target}:fn", tmp_path)
    assert error.message == NAMED + f"python file not found: {(tmp_path / target).resolve()}"


def test_a_scorer_path_with_a_colon_splits_at_the_last_colon(tmp_path: Path) -> None:
    write(tmp_path / "a:b" / "scorer.py", "def fn(output, case):\n    return True\n")
    fn, name = load_function(criterion("a:b/scorer.py:fn"), tmp_path, FILE)
    assert name == "a:b/scorer.py:fn" and fn("x", Case(id="a")) is True


def test_a_function_without_a_module_names_the_file_and_the_fix(tmp_path: Path) -> None:
    error = load_error(":fn", tmp_path)
    assert error.file == FILE
    assert error.fix == "write e.g. `function: scorers:check_answer`"


NESTED = """\
class ns:
    @staticmethod
    def check(output, case):
        return output == "ok"


VALUE = 3
"""


def test_a_dotted_function_name_reaches_a_nested_attribute(tmp_path: Path) -> None:
    write(tmp_path / "nested.py", NESTED)
    fn, _ = load_function(criterion("nested.py:ns.check"), tmp_path, FILE)
    assert fn("ok", Case(id="a")) is True


def test_a_missing_dotted_function_suggests_defining_its_last_part(tmp_path: Path) -> None:
    write(tmp_path / "nested.py", NESTED)
    error = load_error("nested.py:ns.missing", tmp_path)
    assert error.message == NAMED + "'nested.py' has no attribute 'ns.missing'"
    assert error.fix == "define `def missing(output, case): ...` in nested.py, or fix the name"


def test_a_function_that_is_not_callable_names_the_place_and_the_fix(tmp_path: Path) -> None:
    write(tmp_path / "nested.py", NESTED)
    error = load_error("nested.py:VALUE", tmp_path)
    assert error.message == NAMED + "'nested.py:VALUE' is a int, not a function"
    assert (error.file, error.where) == (FILE, "scorecard[2].function")
    assert error.fix == "point `function` at a function taking (output, case)"


def test_a_criterion_without_a_place_names_the_bare_option(tmp_path: Path) -> None:
    error = load_error("no_colon", tmp_path, where="")
    assert error.where == "function"


def test_a_function_with_options_gets_the_case(tmp_path: Path) -> None:
    def fn(output: str, case: Case, **kwargs: Any) -> bool:
        return case.id == kwargs["want"]

    assert call_function(fn, "m:fn", {"want": "a"}, "o", Case(id="a")) == ScoreResult(
        1.0, passed=True
    )


# -- scoring/pyworker.py: the worker loop ------------------------------------------------------


def test_a_call_before_any_load_is_a_raised_reply_naming_no_function(tmp_path: Path) -> None:
    assert serve([("call", "x", Case(id="a"))]) == [
        ("raised", "TypeError: 'NoneType' object is not callable")
    ]


def test_a_load_that_exits_leaves_the_worker_serving_the_next_load(tmp_path: Path) -> None:
    write(tmp_path / "quits.py", "raise SystemExit(4)\n")
    write(tmp_path / "fine.py", "def fn(output, case):\n    return output == 'yes'\n")
    replies = serve(
        [
            ("load", criterion("quits.py:fn"), str(tmp_path), FILE),
            ("load", criterion("fine.py:fn"), str(tmp_path), FILE),
            ("call", "yes", Case(id="a")),
        ]
    )
    assert replies == [
        ("failed", "SystemExit: 4"),
        ("loaded", "fine.py:fn"),
        ("result", ScoreResult(1.0, passed=True)),
    ]


# -- scoring/builtin.py: empty expected lists and schema files ---------------------------------


def test_an_empty_expected_list_fails_the_case_with_the_fix() -> None:
    from evalwh.scoring.builtin import contains, exact

    want = ScoreResult(
        0.0,
        passed=False,
        error="case 'c1' has an empty list as expected value; "
        "list at least one value, or set `value` on the criterion",
    )
    case = Case(id="c1", expected=[])
    assert exact(Criterion(name="e", type="exact"), Path("."), FILE)("x", case) == want
    assert contains(Criterion(name="c", type="contains"), Path("."), FILE)("x", case) == want


def schema_criterion(name: str) -> Criterion:
    return Criterion(
        name="js", type="json-schema", options={"schema_file": name}, where="scorecard[1]"
    )


def schema_error(root: Path, name: str) -> ConfigError:
    from evalwh.scoring.builtin import json_schema

    with pytest.raises(ConfigError) as info:
        json_schema(schema_criterion(name), root, FILE)
    return info.value


def test_an_unreadable_schema_file_names_the_config_file_and_the_option(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_bytes(b'{"type": "object"}\xff\n')
    error = schema_error(tmp_path, "schema.json")
    assert error.message.startswith(
        f"criterion 'js' (json-schema): cannot read schema file {tmp_path / 'schema.json'}: "
    )
    assert (error.file, error.where) == (FILE, "scorecard[1].schema_file")
    assert error.fix == "make the schema file a readable UTF-8 JSON or YAML file"


def test_a_schema_file_is_read_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    from evalwh.scoring.builtin import json_schema

    if sys.flags.utf8_mode:
        pytest.skip("in UTF-8 mode every file is read as UTF-8")
    write(tmp_path / "schema.json", '{"type": "string", "description": "café"}\n')
    old = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, "C")  # an ASCII locale: UTF-8 bytes do not decode
        score = json_schema(schema_criterion("schema.json"), tmp_path, FILE)
    finally:
        locale.setlocale(locale.LC_CTYPE, old)
    assert score('"ok"', Case(id="a")).score == 1.0


def test_a_schema_yaml_with_a_control_character_is_a_config_error_with_its_place(
    tmp_path: Path,
) -> None:
    """Bug found by the survey: PyYAML's reader refused it before the parse, uncaught."""
    write(tmp_path / "schema.yaml", "type: object\x01\n")
    error = schema_error(tmp_path, "schema.yaml")
    path = (tmp_path / "schema.yaml").resolve()
    assert error.message == (
        f"criterion 'js' (json-schema): schema file {path} is not valid YAML: malformed YAML: "
        "unacceptable character #x0001 (special characters are not allowed) (line 1, column 13)"
    )
    assert (error.file, error.where) == (FILE, "scorecard[1].schema_file")
    assert error.fix == (
        "remove the character, or write it as an escape (\\x01) in a double-quoted string"
    )


def test_a_config_with_a_control_character_names_its_line_and_column(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", "models:\n  - {id: m, provider: mock}\x07\n")
    with pytest.raises(ConfigError) as info:
        evalwh.load_config(cfg)
    assert (info.value.file, info.value.line, info.value.column) == (str(cfg), 2, 28)
    assert info.value.message.startswith("malformed YAML: unacceptable character #x0007")


def test_a_yaml_error_without_a_place_or_fix_gets_no_line_and_the_default_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.config import yamlpos

    def fails(text: str, file: str) -> Any:
        raise ConfigError("malformed YAML: odd", file=file)

    monkeypatch.setattr(yamlpos, "parse_yaml", fails)
    write(tmp_path / "schema.yaml", "type: object\n")
    error = schema_error(tmp_path, "schema.yaml")
    path = (tmp_path / "schema.yaml").resolve()
    assert error.message == (
        f"criterion 'js' (json-schema): schema file {path} is not valid YAML: malformed YAML: odd"
    )
    assert error.fix == "fix the YAML syntax of the schema file (or write it as .json)"


# -- scoring/jsonextract.py: the line and column of a JSON error -------------------------------


def test_a_json_error_after_a_leading_newline_is_on_line_2() -> None:
    from evalwh.scoring.jsonextract import parse_json

    assert parse_json('\n{"a": 1 x}\n\n') == (
        False,
        None,
        {"error": "invalid JSON: Expecting ',' delimiter", "line": 2, "column": 9, "position": 9},
    )


def test_a_json_error_column_counts_from_the_nearest_newline() -> None:
    from evalwh.scoring.jsonextract import parse_json

    assert parse_json('\n\n{"a" 1}') == (
        False,
        None,
        {"error": "invalid JSON: Expecting ':' delimiter", "line": 3, "column": 6, "position": 7},
    )


# -- scoring/judge.py: the excerpt of an unusable judge reply ----------------------------------


def no_score(reply: str) -> str | None:
    from evalwh.scoring.judge import parse_score

    return parse_score(reply, (0.0, 1.0)).error


def test_an_unusable_judge_reply_is_quoted_with_its_spaces_squeezed() -> None:
    assert no_score("no  idea\n at all") == "judge reply has no usable score: 'no idea at all'"


def test_an_unusable_judge_reply_of_160_characters_is_quoted_whole() -> None:
    assert no_score("y" * 160) == "judge reply has no usable score: '" + "y" * 160 + "'"


def test_an_unusable_judge_reply_of_161_characters_is_cut_at_160_with_an_ellipsis() -> None:
    assert no_score("y" * 161) == "judge reply has no usable score: '" + "y" * 160 + "…'"


# -- scoring/checks.py: file names, exit codes and the last line of setup output --------------


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        (5, "file names must be non-empty strings, got 5"),
        ("  ", "file names must be non-empty strings, got '  '"),
        ("a\\b", "file name 'a\\\\b' may not contain a backslash or NUL"),
        ("a\x00b", "file name 'a\\x00b' may not contain a backslash or NUL"),
        ("dir/", "file name 'dir/' must be a relative path inside the check folder"),
        (".", "file name '.' is taken: the answer is written to answer.txt"),
        ("tests/test_a.py", None),
    ],
)
def test_extra_file_names_of_a_check_are_refused_with_the_reason(name: Any, problem: Any) -> None:
    from evalwh.scoring.checks import ANSWER_FILE, _file_name_problem

    if problem is not None:
        problem = problem.replace("answer.txt", ANSWER_FILE)
    assert _file_name_problem(name) == problem


def test_a_setup_step_killed_by_a_signal_says_which() -> None:
    from evalwh.scoring.checks import _how

    assert _how(-9) == "killed by signal 9"
    assert _how(2) == "exit 2"


def test_the_last_line_of_setup_output_is_shown_redacted_and_cut_at_200() -> None:
    from evalwh.scoring.checks import _last_line

    assert _last_line("  \n\n", []) == "(no output)"
    assert _last_line("first\nsecond\n\n  last  \n", []) == "last"
    assert _last_line("x" * 200, []) == "x" * 200
    assert _last_line("x" * 201, []) == "x" * 200 + "..."
    assert _last_line("token hunter2-secret-value", ["hunter2-secret-value"]) == "token ***"


# -- engine/budget.py: the refusal an agent reads -----------------------------------------------


def test_a_refused_run_says_why_in_full_and_names_its_error() -> None:
    from evalwh.engine.budget import CostCapError, over_cap

    with pytest.raises(CostCapError) as info:
        over_cap({"cost_usd": 1.23456789, "calls": 7}, 0.5, {"EVALWH_MCP_MAX_COST_CEILING": "7"})
    assert info.value.to_dict() == {
        "error": "CostRefusedError",
        "refused": True,
        "reason": "estimated cost $1.2346 for 7 call(s) exceeds the cap $0.5000; nothing was "
        "called or written (pass a larger max_cost_usd up to the ceiling, or select fewer "
        "models, variants or cases)",
        "estimate_usd": 1.234568,
        "cap_usd": 0.5,
        "ceiling_usd": 7.0,
        "calls": 7,
        "spent_usd": 0.0,
    }


@pytest.mark.parametrize("cost", [None, 0.0])
def test_a_run_without_an_estimated_cost_is_not_refused(cost: float | None) -> None:
    from evalwh.engine.budget import over_cap

    over_cap({"cost_usd": cost, "calls": 3}, 0.5, {})
    over_cap({"calls": 3}, 0.0, {})


# -- engine/runner.py: the deadline error and unrenderable datasource cases --------------------


def test_a_call_past_its_deadline_names_the_last_error_and_is_final() -> None:
    from evalwh.engine.runner import _past_deadline

    model = ModelSpec(id="m", provider="mock", model="m", deadline_s=1.5)
    error = _past_deadline(model, 3, ProviderError("HTTP 500"))
    assert str(error) == (
        "gave up after 3 attempt(s): the call's deadline_s of 1.5 s (retries and waits "
        "included) would pass; last error: HTTP 500"
    )
    assert (error.retryable, error.kind) == (False, "deadline")
    assert str(_past_deadline(model, 1)) == (
        "gave up after 1 attempt(s): the call's deadline_s of 1.5 s (retries and waits "
        "included) would pass"
    )


SOURCE_HEAD = """
models: [{id: m, provider: mock, mock: {default: "{{ vars.q }}"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
scorecard: [{name: exact, type: exact}]
cases: [{source: jsonl-glob, params: {pattern: 's/*.jsonl', page_size: 2}}]
"""


def source_eval(tmp_path: Path) -> Path:
    rows = [{"id": "r0", "q": "a", "expected": "a"}, {"id": "r1", "x": 1}, {"id": "r2", "x": 2}]
    write(tmp_path / "s" / "0.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    return write(tmp_path / "eval.yaml", SOURCE_HEAD)


def test_each_unrenderable_case_is_an_uncached_unattempted_error(tmp_path: Path) -> None:
    result = evalwh.run_eval(source_eval(tmp_path), output_dir=tmp_path / "o")
    assert result.stats["errors"] == 2
    assert result.totals["n_errors"] == 2 and result.totals["n_cached"] == 0
    rows = (
        evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb")
        .sql(
            "SELECT case_id, cached, request_hash, attempts, error_kind FROM cases "
            "WHERE error IS NOT NULL ORDER BY case_id"
        )
        .to_pylist()
    )
    assert rows == [
        {"case_id": c, "cached": False, "request_hash": "", "attempts": 0, "error_kind": "render"}
        for c in ("r1", "r2")
    ]


def test_an_unrenderable_case_in_a_no_look_run_keeps_no_message(tmp_path: Path) -> None:
    result = evalwh.run_eval(source_eval(tmp_path), output_dir=tmp_path / "o", no_look=True)
    assert [(e["error"], e["error_kind"], e["n"]) for e in result.errors] == [
        ("render error", "render", 2)
    ]


# -- warehouse ---------------------------------------------------------------------------------


def fake_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    folder = tmp_path / "fakebin"
    git = write(folder / "git", "#!/bin/sh\n" + script)
    git.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")


@pytest.mark.parametrize("ref", ["-x", "a b", ""])
def test_a_ref_that_could_be_an_option_or_is_not_a_ref_is_refused_before_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ref: str
) -> None:
    from evalwh.warehouse.refs import git_ancestors

    fake_git(tmp_path, monkeypatch, "echo deadbeef\n")
    with pytest.raises(UsageError) as info:
        git_ancestors(ref, tmp_path)
    assert not isinstance(info.value, RunNotFoundError)
    assert str(info.value) == (
        f"git:{ref}: not a git ref (use a branch, tag or commit, e.g. git:main, git:v1.2)"
    )


def test_a_git_that_hangs_is_stopped_at_the_time_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.warehouse import refs

    fake_git(tmp_path, monkeypatch, "exec sleep 5\n")
    monkeypatch.setattr(refs, "GIT_TIMEOUT_S", 0.3)
    with pytest.raises(UsageError) as info:
        refs.git_ancestors("main", tmp_path)
    assert str(info.value).startswith(f"git:main: could not run git in {tmp_path} (")
    assert "timed out after 0.3 seconds" in str(info.value)


def test_git_that_cannot_start_is_named_with_the_folder(tmp_path: Path) -> None:
    from evalwh.warehouse.refs import git_ancestors

    gone = tmp_path / "gone"
    with pytest.raises(UsageError) as info:
        git_ancestors("main", gone)
    assert str(info.value).startswith(f"git:main: could not run git in {gone} (")


@pytest.mark.parametrize(
    ("stderr", "reason"),
    [("warning: x\\nfatal: bad revision nope", "fatal: bad revision nope"), ("", None)],
)
def test_a_ref_git_cannot_resolve_gives_git_s_last_line_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stderr: str, reason: str | None
) -> None:
    from evalwh.warehouse.refs import git_ancestors

    fake_git(tmp_path, monkeypatch, f"printf '{stderr}' >&2\nexit 128\n")
    with pytest.raises(RunNotFoundError) as info:
        git_ancestors("nope", tmp_path)
    assert str(info.value) == (
        f"git:nope: git cannot resolve it in {tmp_path} ({reason or 'unknown revision'}); run "
        "from the repository of the eval (or give -c CONFIG inside it)"
    )


def test_a_resolved_ref_lists_git_s_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.warehouse.refs import git_ancestors

    fake_git(tmp_path, monkeypatch, "printf 'aaa\\nbbb\\n'\n")
    assert git_ancestors("main", tmp_path) == ["aaa", "bbb"]


CACHE_EVAL = """
models: [{id: m, provider: mock, mock: {default: "a"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
scorecard: [{name: exact, type: exact}]
cases: [{id: c1, vars: {q: one}, expected: a}, {id: c2, vars: {q: two}, expected: a}]
"""


def test_a_cache_clear_retried_after_a_lake_conflict_is_logged_as_clearing_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from evalwh.warehouse import lake, store

    cfg = write(tmp_path / "eval.yaml", CACHE_EVAL)
    evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    real = store.write_transaction
    tries: list[int] = []

    def like_a_lake(path: Any, body: Any, *, what: str = "write") -> Any:
        def attempt() -> Any:
            if not tries:
                tries.append(1)
                raise duckdb.TransactionException("Transaction conflict: another writer won")
            return real(path, body, what=what)

        return lake.retry_conflicts(attempt, what=what, first_delay=0.0)

    monkeypatch.setattr(store, "write_transaction", like_a_lake)
    caplog.set_level(logging.DEBUG, logger="evalwh.warehouse")
    assert store.Warehouse(tmp_path / "o" / "warehouse.duckdb").clear_cache() == 2
    assert any(
        r.getMessage().startswith("clear the cache: DuckLake conflict (try 1), retrying")
        for r in caplog.records
    )


def test_a_lake_deadlock_is_a_conflict_to_retry() -> None:
    from evalwh.warehouse.lake import is_conflict

    assert is_conflict(duckdb.TransactionException("Deadlock detected while committing"))


def test_the_artifact_store_counts_stored_files_not_partial_ones_or_folders(
    tmp_path: Path,
) -> None:
    from evalwh.warehouse.artifacts import ArtifactStore

    store = ArtifactStore(tmp_path)
    write(store.folder / "ab" / "cdef", "abc")
    write(store.folder / "ab" / ".partial-1", "12345")
    (store.folder / "ab" / "sub").mkdir()
    assert store.count() == (1, 3)


def test_a_lease_holder_names_its_heartbeat_age_when_known() -> None:
    from evalwh.warehouse.lease import holder

    beat = datetime.now(timezone.utc) - timedelta(seconds=30)
    assert holder({"pid": 12, "host": "box", "heartbeat_at": beat}) == (
        "pid 12 on box, heartbeat 30 s ago"
    )
    assert holder({"pid": 12, "host": "box"}) == "pid 12 on box"


# -- analysis/judging.py ------------------------------------------------------------------------


def test_a_calibration_gate_row_passes_when_the_comparison_is_headline_eligible() -> None:
    from evalwh.analysis.judging import calibration_rules

    data = {
        "calibration": {"on_below_floor": "fail", "min_kappa": 0.6},
        "comparisons": [
            {"comparison": "a", "kappa": 0.8, "n_labels": 30, "headline_eligible": True},
            {"comparison": "b", "kappa": 0.2, "n_labels": 30, "headline_eligible": False},
        ],
    }
    assert [(r["target"], r["passed"]) for r in calibration_rules(data)] == [
        ("a", True),
        ("b", False),
    ]
