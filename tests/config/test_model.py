"""The config model (evalwh/config/model.py): EvalConfig.locate_error gives the config's own
errors the line and column of the place they name, and only those.

The config snapshot a run stores (EvalConfig.snapshot): a no-look run's keeps its file and
datasource entries and its shape, with inline cases and prompt texts replaced by hashes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from evalwh.config.loader import load_config
from evalwh.config.model import hashed
from evalwh.errors import ConfigError
from tests.builders import BASE, ROWS_CONFIG
from tests.conftest import write

CONFIG = BASE  # the minimal config (tests/builders.py)


def test_an_error_about_the_config_gets_the_line_of_the_place_it_names(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    error = config.locate_error(ConfigError("bad", file=str(config.path), where="cases[0]"))
    assert (error.line, error.column) == (10, 5)
    assert str(error) == f"{config.path}:10:5: cases[0]: bad"


def test_an_error_about_another_file_keeps_no_line_from_the_config(tmp_path: Path) -> None:
    """A cases file's error at ``cases[0]`` is not given the line of eval.yaml's cases[0]."""
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    other = str(tmp_path / "cases.jsonl")
    error = config.locate_error(ConfigError("bad", file=other, where="cases[0]"))
    assert (error.line, error.column) == (None, None)
    assert str(error) == f"{other}: cases[0]: bad"


def test_an_error_that_already_has_a_line_keeps_it(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    error = ConfigError("bad", file=str(config.path), where="cases[0]", line=3, column=7)
    located = config.locate_error(error)
    assert (located.line, located.column) == (3, 7)
    assert str(located) == f"{config.path}:3:7: cases[0]: bad"


def test_an_error_naming_no_place_gets_no_line(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    error = config.locate_error(ConfigError("bad", file=str(config.path)))
    assert (error.line, error.column) == (None, None)
    assert str(error) == f"{config.path}: bad"


def test_a_no_look_snapshot_keeps_file_and_datasource_entries_and_hashes_inline_cases(
    tmp_path: Path,
) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "f1", "vars": {"q": "x"}}\n', encoding="utf-8")
    text = ROWS_CONFIG.replace("name: rows\n", "name: rows\nprivacy: {no_look: true}\n").replace(
        "  - {id: other, vars: {q: three}}\n",
        "  - {file: cases.jsonl}\n"
        "  - {source: jsonl-glob, params: {pattern: 'rows/*.jsonl'}, id: ticket_id}\n",
    )
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    config = load_config(tmp_path / "eval.yaml")
    assert config.no_look
    snapshot = config.snapshot()
    assert snapshot["cases"] == [
        {"id": "c1", "vars": {"q": hashed("one")}},
        {"id": "c2", "vars": {"q": hashed("two")}},
        {"file": "cases.jsonl"},
        {"source": "jsonl-glob", "params": {"pattern": "rows/*.jsonl"}, "id": "ticket_id"},
    ]
    assert snapshot["variants"] == [
        {"id": "v", "messages": [{"role": "user", "content": hashed("{{ q }}")}]}
    ]
    assert {k: v for k, v in snapshot.items() if k not in ("cases", "variants")} == {
        k: v for k, v in config.raw.items() if k not in ("cases", "variants")
    }
    (tmp_path / "eval.yaml").write_text(ROWS_CONFIG, encoding="utf-8")
    plain = load_config(tmp_path / "eval.yaml")
    assert plain.snapshot() == plain.raw  # a run that may look keeps its inline cases


def test_the_hash_is_sha256_of_the_values_canonical_json() -> None:
    assert hashed("one") == "sha256:" + hashlib.sha256(b'"one"').hexdigest()
    assert hashed({"b": 1, "a": [2]}) == "sha256:" + hashlib.sha256(b'{"a":[2],"b":1}').hexdigest()


def test_a_no_look_snapshot_leaks_no_inline_case_var_system_prompt_or_rubric(
    tmp_path: Path,
) -> None:
    """Leak: a no-look run stored its config snapshot (runs.config_snapshot) with the
    system prompt, the judge's rubric and every inline case's vars, expected value, label,
    check and files: the private data the mode exists to keep out."""
    secret = "PRIVATE"
    text = f"""\
name: private
privacy: {{no_look: true}}
models:
  - {{id: m, provider: mock, mock: {{default: hi}}}}
variants:
  - id: v
    messages:
      - {{role: system, content: "{secret} system prompt"}}
      - role: user
        content: [{{text: "{secret} {{{{ q }}}}"}}, {{image: "{{{{ files.photo }}}}"}}]
judges:
  - id: j
    rubric: "{secret} rubric"
    model: {{id: jm, provider: mock, mock: {{default: '{{"score": 1}}'}}}}
    messages: [{{role: user, content: "{secret} judge prompt"}}]
cases:
  - id: c1
    vars: {{q: "{secret} question", n: 7}}
    expected: "{secret} answer"
    human_label: "{secret} label"
    check: "echo {secret}"
    files: {{photo: photo.png}}
    metadata: {{lang: en}}
scorecard:
  - {{name: tone, type: llm-judge, judge: j}}
"""
    write(tmp_path / "photo.png", "\x89PNG\r\n\x1a\n" + "x" * 64)
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    snapshot = load_config(tmp_path / "eval.yaml").snapshot()
    assert secret not in json.dumps(snapshot)
    (case,) = snapshot["cases"]
    assert case["id"] == "c1" and case["metadata"] == {"lang": "en"}  # stored anyway
    assert case["vars"] == {"q": hashed(f"{secret} question"), "n": hashed(7)}
    assert case["expected"] == hashed(f"{secret} answer")
    system, user = snapshot["variants"][0]["messages"]
    assert system == {"role": "system", "content": hashed(f"{secret} system prompt")}
    assert user["content"] == [
        {"text": hashed(f"{secret} {{{{ q }}}}")},
        {"image": "{{ files.photo }}"},
    ]
    assert snapshot["judges"][0]["rubric"] == hashed(f"{secret} rubric")
