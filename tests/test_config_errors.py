"""Bad input gets a short error naming the file, the place and the fix; exit 2; nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalwh
from evalwh import load_config
from evalwh.api import validate
from evalwh.errors import ConfigError, EvalwhError
from tests.conftest import run_cli, write

BASE = """\
models:
  - id: m
    provider: mock
variants:
  - id: v
    messages:
      - role: user
        content: "{{ question }}"
cases:
  - id: c1
    vars: {question: "hi"}
    expected: "hi"
scorecard:
  - name: ok
    type: exact
"""


def expect_error(config: Path, *fragments: str) -> str:
    """The CLI refuses with exit 2, the message holds every fragment, and no run was written.

    The same config is checked in-process first (``validate``, what ``run`` checks before it
    calls anything): the CLI runs in a subprocess, out of mutation testing's sight."""
    with pytest.raises(EvalwhError) as info:
        validate(config)
    assert info.value.exit_code == 2, info.value
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in:\n{info.value}"
    result = run_cli("run", str(config), cwd=config.parent)
    assert result.returncode == 2, result.stdout + result.stderr
    message = result.stderr
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    assert "fix:" in message
    assert not (config.parent / ".evalwh").exists(), "a refused run must write nothing"
    return message


def test_malformed_yaml(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE.replace("  - id: v\n", "  - id: v\n   bad: [\n"))
    expect_error(cfg, "eval.yaml:", "malformed YAML")


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace("    provider: mock\n", "    provider: mock\n    max_concurency: 3\n"),
    )
    message = expect_error(cfg, "eval.yaml:4:5", "models[0]", "unknown key 'max_concurency'")
    assert "did you mean 'max_concurrency'" in message


def test_unknown_key_inside_a_criterion(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE + "    case_sensitve: false\n")
    expect_error(
        cfg, "scorecard[0]", "unknown key 'case_sensitve'", "did you mean 'case_sensitive'"
    )


def test_key_of_another_scorer_type_is_unknown(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE + "    pattern: 'x'\n")
    expect_error(cfg, "scorecard[0]", "unknown key 'pattern'")


def test_undefined_template_variable(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE.replace("{{ question }}", "{{ questoin }}"))
    message = expect_error(cfg, "variants[0].messages[0].content[0]", "questoin", "case 'c1'")
    assert "available: question" in message


def test_missing_cases_file(tmp_path: Path) -> None:
    text = BASE.replace(
        '  - id: c1\n    vars: {question: "hi"}\n    expected: "hi"\n',
        "  - file: data/missing.csv\n",
    )
    cfg = write(tmp_path / "eval.yaml", text)
    expect_error(cfg, "cases[0].file", "cases file not found", "missing.csv")


def test_bad_regex(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace("    type: exact\n", "    type: regex\n    pattern: '(unclosed'\n"),
    )
    expect_error(cfg, "scorecard[0].pattern")


def test_invalid_json_schema(tmp_path: Path) -> None:
    text = BASE.replace("    type: exact\n", "    type: json-schema\n    schema: {type: 12}\n")
    cfg = write(tmp_path / "eval.yaml", text)
    expect_error(cfg, "scorecard[0].schema")


def test_csv_missing_a_declared_column(tmp_path: Path) -> None:
    write(tmp_path / "cases.csv", "id,question,expected\nc1,hi,hi\n")
    text = BASE.replace(
        '  - id: c1\n    vars: {question: "hi"}\n    expected: "hi"\n',
        "  - file: cases.csv\n    metadata: [lang]\n",
    )
    message = expect_error(
        write(tmp_path / "eval.yaml", text), "cases.csv", "missing column 'lang'"
    )
    assert "the file has: id, question, expected" in message


def test_csv_without_the_template_variable(tmp_path: Path) -> None:
    write(tmp_path / "cases.csv", "id,prompt,expected\nc1,hi,hi\n")
    text = BASE.replace(
        '  - id: c1\n    vars: {question: "hi"}\n    expected: "hi"\n', "  - file: cases.csv\n"
    )
    expect_error(write(tmp_path / "eval.yaml", text), "question", "cases.csv:2")


def test_unknown_provider_lists_the_known_ones(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE.replace("provider: mock", "provider: mok"))
    expect_error(cfg, "models[0].provider", "unknown provider 'mok'", "mock")


def test_duplicate_ids(tmp_path: Path) -> None:
    text = BASE + "  - name: ok\n    type: exact\n"
    expect_error(write(tmp_path / "eval.yaml", text), "duplicate name 'ok'")


def test_enum_value_suggestion(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE.replace("type: exact", "type: exakt"))
    expect_error(cfg, "scorecard[0].type", "did you mean 'exact'")


def test_missing_config_file(tmp_path: Path) -> None:
    result = run_cli("run", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert "config file not found" in result.stderr and "evalwh init" in result.stderr


def test_a_missing_config_and_one_that_is_no_mapping_name_the_file_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.yaml")
    assert (info.value.message, info.value.file) == (
        "config file not found",
        str(tmp_path / "nope.yaml"),
    )
    assert info.value.fix == "pass the path of an eval.yaml, or create one with `evalwh init`"
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)  # a folder: its eval.yaml
    assert info.value.file == str(tmp_path / "eval.yaml")
    write(tmp_path / "eval.yaml", "- a list\n- not a mapping\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_config("eval.yaml")  # relative: the error names the resolved file
    assert (info.value.message, info.value.file) == (
        "the config must be a YAML mapping",
        str((tmp_path / "eval.yaml").resolve()),
    )
    assert info.value.fix == "start with `models:`"


def test_json_error_output_is_parseable(tmp_path: Path) -> None:
    import json

    cfg = write(
        tmp_path / "eval.yaml", BASE.replace("provider: mock", "provider: mock\n    colour: red")
    )
    result = run_cli("run", str(cfg), "--json", cwd=tmp_path)
    assert result.returncode == 2
    data = json.loads(result.stdout)
    assert data["error"] == "ConfigError" and data["where"] == "models[0]" and data["line"] == 4


def test_threshold_for_unknown_criterion() -> None:
    cfg = write(
        Path("eval.yaml"), BASE + "thresholds:\n  criteria:\n    nope: {min_pass_rate: 0.5}\n"
    )
    with pytest.raises(ConfigError, match="unknown criterion 'nope'"):
        validate(cfg)


def test_prompt_file_and_typed_parts(tmp_path: Path) -> None:
    (tmp_path / "cat.png").write_bytes(b"\x89PNG fake")
    write(
        tmp_path / "prompts" / "p.yaml",
        "messages:\n  - role: user\n    content:\n      - type: text\n        text: 'Q: {{ question }}'\n      - type: image\n        path: cat.png\n",
    )
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace(
            '    messages:\n      - role: user\n        content: "{{ question }}"\n',
            "    prompt: prompts/p.yaml\n",
        ),
    )
    config = load_config(cfg)
    parts = config.variants[0].messages[0].content
    assert [p.type for p in parts] == ["text", "image"]
    plan = validate(config)
    assert plan.sample is not None
    import hashlib

    assert plan.sample["messages"][0]["content"] == [  # the file's identity, not its path
        {"type": "text", "text": "Q: hi"},
        {
            "type": "image",
            "name": "cat.png",
            "sha256": hashlib.sha256(b"\x89PNG fake").hexdigest(),
            "media_type": "image/png",
            "bytes": 9,
        },
    ]


def test_text_prompt_file_is_one_user_message(tmp_path: Path) -> None:
    write(tmp_path / "p.txt", "Say {{ question }}")
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace(
            '    messages:\n      - role: user\n        content: "{{ question }}"\n',
            "    prompt: p.txt\n",
        ),
    )
    plan = validate(cfg)
    assert plan.sample is not None and plan.sample["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Say hi"}]}
    ]


def test_missing_attachment_is_a_validation_error(tmp_path: Path) -> None:
    write(
        tmp_path / "p.yaml",
        "messages:\n  - role: user\n    content:\n      - {type: image, path: gone.png}\n",
    )
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace(
            '    messages:\n      - role: user\n        content: "{{ question }}"\n',
            "    prompt: p.yaml\n",
        ),
    )
    expect_error(cfg, "p.yaml", "cannot read the attached file", "gone.png")


def test_attachment_contents_are_part_of_the_request_hash(tmp_path: Path) -> None:
    from evalwh.config.settings import resolve_settings
    from evalwh.engine.execute import prepare
    from evalwh.engine.plan import Filters

    (tmp_path / "cat.png").write_bytes(b"one")
    write(
        tmp_path / "p.yaml",
        "messages:\n  - role: user\n    content:\n      - {type: image, path: cat.png}\n",
    )
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace(
            '    messages:\n      - role: user\n        content: "{{ question }}"\n',
            "    prompt: p.yaml\n",
        ),
    )
    settings = resolve_settings({}, None, None)
    first = prepare(load_config(cfg), settings, Filters(), 1).hashes
    (tmp_path / "cat.png").write_bytes(b"two")
    second = prepare(load_config(cfg), settings, Filters(), 1).hashes
    assert first != second and len(first) == len(second) == 1


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
