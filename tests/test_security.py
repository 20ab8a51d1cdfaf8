"""One test per attack on evalwh (issue 10, first half), each asserting the harmless outcome.

Templates render in Jinja's sandbox; an MCP client reaches nothing outside its root and runs
no code without ``--allow-code``; text that leaves a provider or a subprocess is redacted
before it is cut; the cost cap counts judges and is enforced on actual spend. The threat
model and the list of defences are in docs/security.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalwh import api
from evalwh.errors import ConfigError
from tests.conftest import write
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


def config(folder: Path, prompt: str = '"{{ question }}"', mock: str = "", extra: str = "") -> Path:
    text = BASE.replace("MOCK", mock).replace("PROMPT", prompt) + extra
    return write(folder / "eval.yaml", text)


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
    text = BASE.replace("MOCK", "").replace("PROMPT", '"{{ question }}"')
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


def test_template_payload_in_mcp_render_prompt_is_refused(tmp_path: Path) -> None:
    from evalwh import briefs

    marker = tmp_path / "pwned"
    root = tmp_path / "root"
    config(root, prompt=json.dumps(_popen(marker)))
    agent = briefs.Agent(root=root.resolve(), cwd=root)
    with pytest.raises(ConfigError, match="sandbox violation"):
        briefs.render_prompt(agent, "eval.yaml", "v", "c1")
    assert not marker.exists()
