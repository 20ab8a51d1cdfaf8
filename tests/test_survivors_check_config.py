"""The checks a run makes of its config before anything is sent
(evalwh.engine.execute.check_config), each refusal with its file, place and fix; and the
secrets a config names (secret_names), which are loaded before the first request.

Written from mutants that survived the mutation run (docs/testing.md): these refusals were
checked through the CLI, in tests too slow for the mutation budget.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalwh.config.loader import load_config
from evalwh.engine.execute import check_config, secret_names
from evalwh.errors import ConfigError
from tests.test_survivors_case_files import KEY
from tests.test_survivors_run_row import CONFIG

BASE = CONFIG + "  - {name: alpha, type: contains, value: a}\n"  # two criteria


def checked(tmp_path: Path, text: str) -> Any:
    """The config check_config returns for ``text`` (as eval.yaml in ``tmp_path``)."""
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    return check_config(load_config(tmp_path / "eval.yaml"))[1]


def refusal(tmp_path: Path, text: str) -> ConfigError:
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        check_config(load_config(tmp_path / "eval.yaml"))
    assert refused.value.file == str(tmp_path / "eval.yaml")
    return refused.value


def test_a_key_in_the_config_is_refused_where_it_is(tmp_path: Path) -> None:
    text = BASE.replace("mock: {default: hi}}", f"mock: {{default: {KEY}}}}}")
    error = refusal(tmp_path, text)
    assert (error.message, error.fix) == (
        "this looks like an API key (openai); keys never belong in eval.yaml",
        "remove it, rotate the key if the file was shared, and set it in the environment or in"
        " .evalwh.secrets.yaml (see docs/secrets.md)",
    )
    assert error.where == "models[0].mock.default"


def test_a_threshold_for_an_unknown_criterion_names_the_known_ones(tmp_path: Path) -> None:
    error = refusal(tmp_path, BASE + "thresholds: {criteria: {nope: {min_pass_rate: 0.5}}}\n")
    assert (error.message, error.where, error.fix) == (
        "threshold for unknown criterion 'nope'",
        "thresholds.criteria.nope",
        "use a scorecard criterion name: alpha, has",
    )


def test_a_no_look_eval_with_pairwise_judging_is_refused(tmp_path: Path) -> None:
    text = BASE.replace("name: rows\n", "name: rows\nprivacy: {no_look: true}\n").replace(
        "  - {id: m, provider: mock, mock: {default: hi}}",
        "  - {id: m, provider: mock, mock: {default: hi}}\n  - {id: n, provider: mock}",
    ) + (
        "judges:\n  - {id: j, model: {id: jm, provider: mock, mock: {default: A}}}\n"
        "pairwise:\n  - {name: cmp, judge: j, baseline: {model: m}, candidate: {model: n}}\n"
    )
    error = refusal(tmp_path, text)
    assert (error.message, error.where, error.fix) == (
        "pairwise judging compares two stored answers, and a no-look run stores none",
        "pairwise",
        "remove `pairwise:` from this no-look eval, or run it without no-look",
    )


def test_a_native_schema_for_a_provider_without_one_is_refused(tmp_path: Path) -> None:
    text = BASE.replace(
        "  - {id: m, provider: mock, mock: {default: hi}}",
        "  - {id: m, provider: command, command: [echo, hi]}",
    ).replace(
        '{{ q }}"}]}',
        '{{ q }}"}], output_schema: {schema: {type: object}, mode: native}}',
    )
    error = refusal(tmp_path, text)
    assert (error.message, error.where, error.fix) == (
        "model 'm' (provider command) cannot be asked for JSON by schema natively",
        "variants[0].output_schema.mode",
        "use mode: auto (prompted where native is not supported) or mode: prompted",
    )
    native = text.replace(
        "{id: m, provider: command, command: [echo, hi]}", "{id: m, provider: mock}"
    )
    (tmp_path / "eval.yaml").write_text(native, encoding="utf-8")
    check_config(load_config(tmp_path / "eval.yaml"))  # the mock takes a schema natively


def test_a_paid_model_with_no_known_price_is_refused(tmp_path: Path) -> None:
    text = BASE.replace(
        "  - {id: m, provider: mock, mock: {default: hi}}",
        "  - {id: m, provider: openai, model: not-a-listed-model}",
    )
    error = refusal(tmp_path, text)
    assert error.message.startswith("no known price for openai model 'not-a-listed-model'")
    assert error.where == "models[0]"
    assert error.fix == (
        "add `price: {input_per_mtok: ..., output_per_mtok: ...}` to the model, or `price: 0`"
        " for a local model"
    )


def test_a_paid_judge_with_no_known_price_is_refused(tmp_path: Path) -> None:
    text = BASE + (
        "judges:\n  - {id: j, model: {id: jm, provider: openai, model: not-a-listed-model}}\n"
    )
    error = refusal(tmp_path, text)
    assert error.message.startswith("no known price for openai model 'not-a-listed-model'")
    priced = text.replace("model: not-a-listed-model}", "model: not-a-listed-model, price: 0}")
    (tmp_path / "eval.yaml").write_text(priced, encoding="utf-8")
    _, checked = check_config(load_config(tmp_path / "eval.yaml"))
    assert checked.judges[0].model.price is not None


def test_the_secrets_a_config_names_are_its_key_variables_and_header_references(
    tmp_path: Path,
) -> None:
    text = (
        BASE.replace(
            "  - {id: m, provider: mock, mock: {default: hi}}",
            "  - {id: m, provider: mock, mock: {default: hi}}\n"
            "  - {id: o, provider: openai, model: gpt-4o-mini}\n"
            "  - {id: g, provider: openai, model: gpt-4o-mini, api_key_env: GATEWAY_KEY,\n"
            "     headers: {X-Team: '${TEAM_TOKEN}', X-Org: 'org ${ORG_TOKEN}'}}",
        )
        + "judges:\n  - {id: j, model: {id: jm, provider: anthropic, model: claude-3-5-haiku-latest}}\n"
    )
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    assert secret_names(load_config(tmp_path / "eval.yaml")) == [
        "OPENAI_API_KEY", "GATEWAY_KEY", "TEAM_TOKEN", "ORG_TOKEN", "ANTHROPIC_API_KEY",
    ]  # fmt: skip


def test_a_providers_own_refusal_names_the_config_file(tmp_path: Path) -> None:
    text = BASE.replace(
        "{id: m, provider: mock, mock: {default: hi}}", "{id: m, provider: openai-compatible}"
    )
    error = refusal(tmp_path, text)  # refusal() checks the file
    assert (error.message, error.where) == (
        "provider 'openai-compatible' needs a base_url",
        "models[0].base_url",
    )


GEMINI_SCHEMA = BASE.replace(
    "{id: m, provider: mock, mock: {default: hi}}",
    "{id: m, provider: google, model: gemini-2.5-flash}",
).replace(
    '{id: v, messages: [{role: user, content: "{{ q }}"}]}',
    '{id: v, messages: [{role: user, content: "{{ q }}"}], output_schema: '
    "{MODE schema: {type: object, properties: {a: {type: widget}}}}}",
)


def test_a_schema_the_provider_cannot_send_natively_is_refused_at_validation(
    tmp_path: Path,
) -> None:
    error = refusal(tmp_path, GEMINI_SCHEMA.replace("MODE ", ""))  # mode auto: native here
    assert (error.message, error.where, error.fix) == (
        "the output schema cannot be sent as Gemini's responseSchema: type 'widget' is not a "
        "JSON Schema type",
        "variants[0].output_schema",
        "simplify the schema, or ask for it by prompt (mode: prompted)",
    )
    # asked for by prompt, the same schema is never sent as Gemini's Schema: not refused
    checked(tmp_path, GEMINI_SCHEMA.replace("MODE ", "mode: prompted, "))


JUDGED = BASE + (
    "  - {name: judged, type: llm-judge, judge: j}\njudges:\n  - {id: j, model: JUDGE, EXTRA}\n"
)


@pytest.mark.parametrize(
    ("model", "extra", "message", "where"),
    [
        (
            "{id: jm, provider: openai-compatible}",
            'rubric: "Is it right?"',
            "provider 'openai-compatible' needs a base_url",
            "judges[0].model.base_url",
        ),
        (
            "{id: jm, provider: mock}",
            'messages: [{role: user, content: "Is {{ output right?"}]',
            "template syntax error: expected token 'end of print statement', got 'right' "
            "(line 1 of the template)",
            "judges[0].messages[0].content[0]",
        ),
    ],
    ids=["provider", "template"],
)
def test_a_judges_refusal_names_the_config_file(
    tmp_path: Path, model: str, extra: str, message: str, where: str
) -> None:
    error = refusal(tmp_path, JUDGED.replace("JUDGE", model).replace("EXTRA", extra))
    assert (error.message, error.where) == (message, where)


def test_each_cases_check_is_parsed_and_a_case_without_one_keeps_none(tmp_path: Path) -> None:
    from evalwh.scoring.checks import CheckSpec

    text = BASE.replace("{id: c1, vars: {q: one}}", '{id: c1, vars: {q: one}, check: "true"}')
    assert [c.check for c in checked(tmp_path, text).cases] == [CheckSpec(run="true"), None, None]
    # every case with a check: all parsed
    every = text.replace(
        "{id: c2, vars: {q: two}}", "{id: c2, vars: {q: two}, check: {run: 'false', timeout_s: 3}}"
    )
    every = every.replace(
        "{id: other, vars: {q: three}}", "{id: other, vars: {q: three}, check: x}"
    )
    assert [c.check for c in checked(tmp_path, every).cases] == [
        CheckSpec(run="true"),
        CheckSpec(run="false", timeout_s=3),
        CheckSpec(run="x"),
    ]


def test_a_scorecard_refusal_names_the_config_file(tmp_path: Path) -> None:
    error = refusal(tmp_path, BASE + "  - {name: r, type: regex, pattern: '('}\n")
    assert error.where == "scorecard[2].pattern"


def test_the_checked_config_carries_each_models_and_judges_price(tmp_path: Path) -> None:
    from evalwh.providers.pricing import table_price

    text = BASE.replace(
        "{id: m, provider: mock, mock: {default: hi}}",
        "{id: m, provider: openai, model: gpt-4o-mini}",
    ) + (
        "  - {name: judged, type: llm-judge, judge: j}\n"
        "judges:\n  - {id: j, model: {id: jm, provider: anthropic, model: claude-sonnet-4-5}}\n"
    )
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    loaded = load_config(tmp_path / "eval.yaml")
    assert loaded.models[0].price is None and loaded.judges[0].model.price is None
    result = checked(tmp_path, text)
    assert result.models[0].price == table_price("openai", "gpt-4o-mini") is not None
    assert result.judges[0].model.price == table_price("anthropic", "claude-sonnet-4-5")
    assert result.judges[0].model.price is not None
