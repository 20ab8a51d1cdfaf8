"""A cell's transcript for python scorers and LLM judges (evalwh/scoring/transcript.py): the
steps a python scorer gets when its function has a ``transcript`` parameter, the rendering a
judge reads (``{{ transcript }}``, in the default prompt when the cell has a loop), its bounds,
and the judge's cache key covering it. The end-to-end tests run real tool loops of a scripted
mock model calling a mock tool, as examples/tools/ does.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import evalwh
from evalwh.scoring.transcript import STEP_MAX_CHARS, TRANSCRIPT_MAX_CHARS, render_transcript
from tests.builders import stored
from tests.conftest import write
from tests.features.test_tool_loops import WEATHER

# the weather tool of the loop tests, its Paris result's temperature left to each test
LOOP = (
    "tools:\n"
    + WEATHER.replace("{temp_c: 18}", "{temp_c: TEMP}")
    + """\
models:
  - id: agent
    provider: mock
    mock:
      default: It is mild in Paris.
      rules:
        - when: {turn: 0}
          tool_calls: [{name: get_weather, arguments: {town: Paris}}]
        - when: {turn: 1}
          tool_calls: [{name: get_weather, arguments: {city: Paris}}]
variants:
  - id: v
    messages: [{role: user, content: "Weather in Paris?"}]
    tools: [get_weather]
cases:
  - {id: paris}
"""
)

SCORERS = """\
import json


def steps(output, case, transcript):
    return {"score": 1.0, "details": {"steps": json.loads(json.dumps(transcript))}}


def keyword_only(output, case, *, transcript, word):
    return {"score": 1.0, "details": {"n": len(transcript), "word": word}}


def old_style(output, case, **options):
    return {"score": 1.0, "details": {"options": sorted(options)}}
"""


def details(out: Path, criterion: str) -> Any:
    (row,) = stored(out, f"SELECT details, error FROM scores WHERE criterion = '{criterion}'")
    assert row["error"] is None
    return json.loads(row["details"])


KEY = "sk-ant-api03-" + "A" * 30
# the tool's result holds a key: what the scorer gets is redacted as the warehouse stores it
TOOL = f"def get_weather(city):\n    return {{'temp_c': 18, 'token': {KEY!r}}}\n"


def test_a_python_scorer_with_a_transcript_parameter_gets_the_loops_steps(tmp_path: Path) -> None:
    # attack: a tool returning a key; the scorer (user code, whose details are stored) and the
    # warehouse get the same *** text, never the key
    write(tmp_path / "scorers.py", SCORERS)
    write(tmp_path / "lookup.py", TOOL)
    mock = LOOP[LOOP.index("    mock:\n      - when") : LOOP.index("models:")]
    assert "Rome" in mock  # the whole mock implementation is replaced
    cfg = write(
        tmp_path / "eval.yaml",
        LOOP.replace(mock, '    python: "lookup.py:get_weather"\n')
        + """\
scorecard:
  - {name: steps, type: python, function: "scorers.py:steps"}
  - {name: kw, type: python, function: "scorers.py:keyword_only", options: {word: w}}
  - {name: old, type: python, function: "scorers.py:old_style", options: {a: 1}}
""",
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    steps = details(tmp_path / "out", "steps")["steps"]
    assert [(s["turn"], s["role"], s["tool_name"]) for s in steps] == [
        (0, "assistant", None),
        (0, "tool", "get_weather"),
        (1, "assistant", None),
        (1, "tool", "get_weather"),
        (2, "assistant", None),
    ]
    first, refused, _, answered, final = steps
    assert [c["arguments"] for c in first["arguments"]] == [{"town": "Paris"}]
    assert refused["args_valid"] is False and "invalid arguments" in refused["error"]
    assert (answered["arguments"], answered["result"], answered["error"]) == (
        {"city": "Paris"},
        {"temp_c": 18, "token": "***"},
        None,
    )
    assert final["content"] == "It is mild in Paris." and final["arguments"] is None
    # the steps are the turns table's rows, in its order
    rows = stored(tmp_path / "out", "SELECT role, content, error, result FROM turns ORDER BY seq")
    assert [(r["role"], r["content"], r["error"]) for r in rows] == [
        (s["role"], s["content"], s["error"]) for s in steps
    ]
    assert KEY not in json.dumps(rows) and KEY not in json.dumps(steps)
    assert details(tmp_path / "out", "kw") == {"n": 5, "word": "w"}
    # a function without the parameter is called as before: **options gets no transcript
    assert details(tmp_path / "out", "old") == {"options": ["a"]}


def test_a_cell_without_a_loop_gives_an_empty_transcript(tmp_path: Path) -> None:
    from evalwh.config.model import Case
    from evalwh.scoring import build_scorer
    from tests.scoring.test_base import FILE, crit

    write(tmp_path / "scorers.py", SCORERS)
    fn = build_scorer(crit("python", function="scorers.py:steps"), tmp_path, FILE)
    assert fn("x", Case(id="c")).details == {"steps": []}
    old = build_scorer(crit("python", function="scorers.py:old_style"), tmp_path, FILE)
    assert not old.wants_transcript and fn.wants_transcript


JUDGED = """\
judges:
  - id: j
    scale: {min: 1, max: 5}
    model:
      {id: jm, provider: mock, mock: {default: '{"score": 1}', rules: [
        {when: {prompt: 'tool get_weather {"city": "Paris"}:'}, reply: '{"score": 5}'}]}}
scorecard:
  - {name: judged, type: llm-judge, judge: j}
"""


def test_the_judge_sees_the_transcript_and_is_asked_again_when_it_changed(
    tmp_path: Path,
) -> None:
    # the judge scores 5 only when its prompt shows the call and its result; then: same
    # question, same final answer, only the tool's result differs
    out = tmp_path / "out"
    verdicts = "SELECT count(*) AS n FROM response_cache WHERE output LIKE '{\"score\"%'"
    cfg = write(tmp_path / "eval.yaml", LOOP.replace("TEMP", "18") + JUDGED)
    first = evalwh.run_eval(cfg, output_dir=out)
    assert first.stats["requests"] == 4  # three model turns and the judge
    (row,) = stored(out, "SELECT raw_score FROM scores WHERE criterion = 'judged'")
    assert row["raw_score"] == 5.0
    assert stored(out, verdicts) == [{"n": 1}]
    write(tmp_path / "eval.yaml", LOOP.replace("TEMP", "31") + JUDGED)
    changed = evalwh.run_eval(cfg, output_dir=out)
    # the first two turns came from the cache (their transcripts did not change); the last
    # turn (after the new result) and the judge were sent: the judge's key covers the
    # transcript, or its verdict on the first transcript would have been replayed
    assert changed.stats["requests"] == 2 and changed.stats["cache_hits"] == 2
    assert stored(out, verdicts) == [{"n": 2}]


def test_a_judge_prompt_shows_the_transcript_only_when_there_is_one() -> None:
    from evalwh.config.model import Case, Judge, ModelSpec
    from evalwh.config.prompts import messages_from_config
    from evalwh.scoring.judge import JudgePrompts

    judge = Judge(id="j", model=ModelSpec(id="jm", provider="mock", model="jm"))
    prompts = JudgePrompts(judge, "eval.yaml")
    plain = prompts.point(Case(id="c"), "Weather?", "Mild.")
    # no loop: the prompt it always was, so the cache keys of judged runs stay as they were
    assert plain == prompts.point(Case(id="c"), "Weather?", "Mild.", "")
    assert "tool calls" not in json.dumps(plain)
    shown = prompts.point(Case(id="c"), "Weather?", "Mild.", "tool t {}:\n1")
    assert "results):\\ntool t {}:\\n1\\n\\nAnswer to grade" in json.dumps(shown)
    custom = JudgePrompts(
        replace(
            judge,
            messages=messages_from_config(
                [{"role": "user", "content": "Steps: {{ transcript }}|{{ output }}"}]
            ),
        ),
        "eval.yaml",
    )
    (message,) = custom.point(Case(id="c"), "Weather?", "Mild.", "tool t {}:\n1")
    assert message["content"] == [{"type": "text", "text": "Steps: tool t {}:\n1|Mild."}]


def test_the_rendering_shows_each_step_with_its_calls_arguments_results_and_errors() -> None:
    text = render_transcript(
        [
            {
                "turn": 0,
                "role": "assistant",
                "content": "Let me look.",
                "arguments": [{"id": "c0", "name": "get_weather", "arguments": {"town": "X"}}],
            },
            {
                "turn": 0,
                "role": "tool",
                "tool_name": "get_weather",
                "arguments": {"town": "X"},
                "error": "invalid arguments for get_weather: 'city' is a required property",
            },
            {"turn": 1, "role": "tool", "tool_name": "echo", "arguments": {}, "result": "plain"},
            {"turn": 2, "role": "assistant", "content": "Done.", "arguments": None},
        ]
    )
    assert text == (
        'assistant (turn 0):\nLet me look.\n-> get_weather {"town": "X"}\n\n'
        'tool get_weather {"town": "X"} failed:\n'
        "invalid arguments for get_weather: 'city' is a required property\n\n"
        "tool echo {}:\nplain\n\n"
        "assistant (turn 2):\nDone."
    )
    assert render_transcript([]) == render_transcript(None) == ""


def test_a_huge_tool_result_and_a_long_loop_are_cut_to_their_bounds() -> None:
    # attack: a tool returning megabytes (a web page) must not blow up the judge's prompt
    huge = {"turn": 0, "role": "tool", "tool_name": "fetch", "arguments": {}, "result": "x" * 10**6}
    one = render_transcript([huge])
    assert len(one) <= STEP_MAX_CHARS and "output truncated: " in one
    assert one.startswith("tool fetch {}:\nxxx")
    many = render_transcript([huge] * 100)
    assert len(many) <= TRANSCRIPT_MAX_CHARS
