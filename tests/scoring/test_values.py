"""Criterion values as templates (evalwh/scoring/values.py): ``value: "{{ expected }}"``
rendered per case in the prompts' sandbox, errors that name the criterion and the case, case
data that stays data, regex patterns whose inserted values are escaped, and the warning for a
literal value in another tool's template syntax."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import evalwh
from evalwh.config.model import Case
from evalwh.errors import ConfigError
from evalwh.scoring import values as values_module
from evalwh.scoring.base import build_scorer
from evalwh.scoring.values import foreign_templates
from tests.conftest import write
from tests.scoring.test_base import FILE, crit, run

PROMPTFOO_HABIT = """\
models: [{id: m, provider: mock, mock: {default: "It is Paris, I think."}}]
variants: [{id: v, messages: [{role: user, content: "Capital of {{ country }}?"}]}]
cases:
  - {id: fr, vars: {country: France}, expected: Paris}
  - {id: it, vars: {country: Italy}, expected: Rome}
scorecard:
  - {name: answer, type: contains, value: "{{ expected }}"}
"""


def test_the_promptfoo_habit_compares_each_cases_expected_value(tmp_path: Path) -> None:
    """Bug: `contains` with `value: "{{ expected }}"` (how promptfoo writes it) looked for the
    literal text `{{ expected }}` in every answer: 0 % passed and nothing said why. The value
    is rendered for each case: Paris is found in the answer about France, Rome is not."""
    cfg = write(tmp_path / "eval.yaml", PROMPTFOO_HABIT)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert result.totals["n_passed"] == 1
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, passed, details FROM scores ORDER BY case_id"
        ).fetchall()
    assert [(c, p, json.loads(d)) for c, p, d in rows] == [
        ("fr", True, {"found": ["Paris"], "missing": []}),
        ("it", False, {"found": [], "missing": ["Rome"]}),
    ]


def test_values_see_vars_metadata_and_the_case_as_prompts_do() -> None:
    case = Case(id="c1", vars={"city": "Lyon", "n": 3}, expected="x", metadata={"lang": "fr"})
    assert run(crit("exact", value="{{ vars.city }}-{{ n }}"), "Lyon-3", case).score == 1.0
    assert (
        run(crit("contains", value=["{{ city }}", "{{ metadata.lang }}"]), "fr Lyon", case).score
        == 1.0
    )
    assert run(crit("contains", value="{{ case.metadata.lang | upper }}"), "FR", case).score == 1.0
    assert run(crit("not-contains", value="{{ expected }}"), "y", case).score == 1.0
    bleu = crit("bleu", reference="the cat sat in {{ city }}")
    assert run(bleu, "the cat sat in Lyon", case).score == pytest.approx(1.0)
    assert run(crit("rouge-l", reference="{{ city }}"), "Lyon", case).score == 1.0


def test_a_value_without_template_marks_is_compared_as_written() -> None:
    """`{`, `}` or `{x}` alone are no template: the scorers behave exactly as before."""
    case = Case(id="c1", vars={"x": "nope"})
    assert run(crit("contains", value="{x}"), "a {x} b", case).score == 1.0
    assert run(crit("exact", value="{ x }"), "{ x }", case).score == 1.0
    assert run(crit("regex", pattern=r"^\d{3}$"), "123", case).score == 1.0


def test_case_data_is_never_rendered_as_a_template() -> None:
    """Template injection from a case file: a case's expected answer (untrusted data, like a
    model output) holding `{{ ... }}` is inserted as text. Only eval.yaml's own values are
    templates, so a case cannot read another var or reach the sandbox."""
    case = Case(
        id="evil",
        vars={"secret": "s3cr3t"},
        expected="{{ vars.secret }}{{ cycler.__init__.__globals__ }}",
    )
    templated = run(crit("contains", value="{{ expected }}"), "s3cr3t", case)
    assert templated.score == 0.0 and templated.details == {
        "found": [],
        "missing": ["{{ vars.secret }}{{ cycler.__init__.__globals__ }}"],
    }
    literal = "{{ vars.secret }}{{ cycler.__init__.__globals__ }}"
    assert run(crit("contains", value="{{ expected }}"), f"said {literal}", case).score == 1.0
    assert run(crit("contains"), "s3cr3t", case).score == 0.0  # no value: expected as text
    assert run(crit("exact"), literal, case).score == 1.0


def test_a_regex_pattern_inserts_case_values_escaped() -> None:
    """In a pattern, every inserted value matches literally: `1+1` is not "one or more 1s
    then 1", and a case's `(a+)+$` cannot make the pattern backtrack for ever (ReDoS)."""
    case = Case(id="c1", expected="1+1", vars={"evil": "(a+)+$"})
    pattern = crit("regex", pattern="^{{ expected }} = 2$")
    assert run(pattern, "1+1 = 2", case).score == 1.0
    assert run(pattern, "11 = 2", case).score == 0.0
    assert run(crit("regex", pattern="{{ evil }}"), "a" * 40 + "!", case).score == 0.0
    assert run(crit("regex", pattern="{{ evil }}"), "x (a+)+$", case).details == {"match": "(a+)+$"}
    # the template's own regex syntax stays regex
    assert run(crit("regex", pattern=r"^\d+ {{ expected }}$"), "42 1+1", case).score == 1.0


@pytest.mark.parametrize(
    ("value", "message", "fix"),
    [
        (
            "{{ vars.nope }}",
            "criterion 'answer' (contains): the value template failed for case 'fr': "
            "'dict object' has no attribute 'nope'",
            "use a name the case has (eval.yaml cases[0]): case, country, expected, metadata, vars",
        ),
        (
            "{{ expected | int(strict=1) }}",
            "criterion 'answer' (contains): the value template failed for case 'fr': TypeError",
            "check the template against the case's data (eval.yaml cases[0])",
        ),
    ],
)
def test_a_template_that_fails_for_a_case_stops_validate_naming_criterion_and_case(
    tmp_path: Path, value: str, message: str, fix: str
) -> None:
    cfg = write(
        tmp_path / "eval.yaml", PROMPTFOO_HABIT.replace('"{{ expected }}"', json.dumps(value))
    )
    with pytest.raises(ConfigError) as refused:
        evalwh.validate(cfg, output_dir=tmp_path / "out")
    assert refused.value.where == "scorecard[0].value"
    assert refused.value.line == 7  # the scorecard entry
    assert refused.value.message.startswith(message)
    assert (refused.value.fix or "").startswith(fix)
    assert not (tmp_path / "out" / "warehouse.duckdb").exists()


def test_a_case_without_expected_is_named_when_the_template_needs_one() -> None:
    fn = build_scorer(crit("contains", name="answer", value="{{ expected }}"), Path.cwd(), FILE)
    with pytest.raises(ConfigError) as refused:
        fn.prepare(Case(id="bare", source="cases.csv:3"))  # type: ignore[attr-defined]
    assert "for case 'bare': 'expected' is undefined; the case has no expected value" in str(
        refused.value
    )


def test_a_sandbox_escape_in_a_value_is_refused_when_the_scorer_is_built() -> None:
    with pytest.raises(ConfigError) as refused:
        build_scorer(crit("contains", value="{{ expected.__class__ }}"), Path.cwd(), FILE)
    assert refused.value.where == "scorecard[0].value"
    assert "template sandbox violation: access to '__class__'" in refused.value.message


def test_values_render_once_per_case_not_once_per_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two variants x two models x two repeats score each case 8 times; its value renders
    once (when the run checks its config), and is reused for every answer."""
    rendered: list[str] = []
    real = values_module.CaseValues._render

    def counting(self: values_module.CaseValues, case: Case) -> list[str]:
        rendered.append(case.id)
        return real(self, case)

    monkeypatch.setattr(values_module.CaseValues, "_render", counting)
    config = (
        PROMPTFOO_HABIT.replace(
            "models: [{id: m, ", "models: [{id: m2, provider: mock}, {id: m, "
        ).replace(
            "variants: [{id: v, ",
            'variants: [{id: w, messages: [{role: user, content: "{{ country }}"}]}, {id: v, ',
        )
        + "settings: {repeat: 2}\n"
    )
    result = evalwh.run_eval(write(tmp_path / "eval.yaml", config), output_dir=tmp_path / "o")
    assert result.totals["n"] == 16
    assert sorted(rendered) == ["fr", "it"]


# -- other tools' template syntax ----------------------------------------------------------
HABITS = """\
models: [{id: m, provider: mock}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
cases: [{id: c1, vars: {q: a}, expected: a}]
scorecard:
  - {name: py, type: contains, value: "{answer}"}
  - {name: js, type: exact, value: ["ok", "${vars.q}"]}
  - {name: fine, type: contains, value: "{{ expected }}"}
  - {name: regex, type: regex, pattern: '^\\d{2,3}$'}
  - {name: braces, type: contains, value: "{ not a name }"}
"""


def test_validate_warns_of_another_tools_template_syntax_with_its_line(tmp_path: Path) -> None:
    """`{answer}` (Python's str.format: inspect_ai, OpenAI evals, LangChain) and `${vars.q}`
    (JavaScript, shell) are compared as written: validate says so, where, and how evalwh
    writes it. Jinja values, regex quantifiers and braces around other text are left alone."""
    cfg = write(tmp_path / "eval.yaml", HABITS)
    warnings = evalwh.validate(cfg, output_dir=tmp_path / "out").warnings
    assert [(w["where"], w["line"], w["found"], w["name"]) for w in warnings] == [
        ("scorecard[0].value", 5, "{answer}", "answer"),
        ("scorecard[1].value[1]", 6, "${vars.q}", "vars.q"),
    ]
    assert warnings[0]["message"] == (
        f"{cfg}:5:39: scorecard[0].value: '{{answer}}' looks like a template of another tool "
        "(Python str.format {...}, as inspect_ai, OpenAI evals and LangChain write it) and is "
        "compared as written; evalwh templates are Jinja: write {{ answer }}"
    )
    assert warnings[1]["column"] == 43


def test_foreign_templates_of_a_config_without_them_is_empty(tmp_path: Path) -> None:
    cfg = evalwh.load_config(write(tmp_path / "eval.yaml", PROMPTFOO_HABIT))
    assert foreign_templates(cfg) == []
