"""The config loader in-process (evalwh/config/loader.py): suite defaults under each model, the
fields of a model, pairwise comparisons and the human labels that name them.

Most of the loader's refusals were tested through the CLI in a subprocess, where mutation
testing cannot see them, and the in-process tests that reach it are whole runs, of which the
mutation budget affords two or three: the loader ended the sixth mutation run at 74 % killed.
These tests read configs directly and pin each value, message, place and fix.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evalwh import load_config
from evalwh.config.datasets import dataset_rows
from evalwh.config.loader import NOT_HASHED, canonical_hash, with_defaults
from evalwh.config.model import Calibration, EvalConfig, Label, PointLabel, Price, Side, Variant
from evalwh.errors import ConfigError
from tests.conftest import write
from tests.test_survivors_inputs import ascii_locale  # noqa: F401  (a fixture)

HEAD = """\
models:
  - {id: a, provider: mock}
  - {id: b, provider: mock}
variants:
  - {id: v1, messages: [{role: user, content: "{{ q }}"}]}
  - {id: v2, messages: [{role: user, content: "say {{ q }}"}]}
cases:
  - {id: c1, vars: {q: hi}}
scorecard:
  - {name: ok, type: contains, value: hi}
judges:
  - {id: j, model: {id: jm, provider: mock}}
pairwise:
  - {name: by-model, judge: j, baseline: {model: a}, candidate: {model: b}}
  - {name: by-variant, judge: j, baseline: {variant: v1}, candidate: {variant: v2}}
"""
LABELS_AT = HEAD.count("\n") + 2  # the line of the first entry under `labels:`
ENTRIES = "pairwise entries: by-model, by-variant"


def config(tmp_path: Path, text: str) -> EvalConfig:
    return load_config(write(tmp_path / "eval.yaml", text))


def config_error(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        config(tmp_path, text)
    return info.value


def labels(tmp_path: Path, *entries: str) -> list[Label]:
    text = HEAD + "labels:\n" + "".join(f"  - {e}\n" for e in entries)
    return config(tmp_path, text).labels


def refused(tmp_path: Path, *entries: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        labels(tmp_path, *entries)
    return info.value


# ---- defaults and models ----------------------------------------------------------------------


def test_a_models_own_keys_win_over_the_defaults_and_params_merge_key_by_key() -> None:
    defaults = {"timeout_s": 5, "max_retries": 1, "params": {"temperature": 0, "top_p": 1}}
    raw = {"id": "a", "provider": "mock", "max_retries": 7, "params": {"top_p": 0.5, "seed": 3}}
    assert with_defaults(raw, defaults) == {
        "id": "a",
        "provider": "mock",
        "timeout_s": 5,
        "max_retries": 7,
        "params": {"temperature": 0, "top_p": 0.5, "seed": 3},
    }
    assert with_defaults(raw, {}) is raw  # no defaults: the entry as written
    # params from one side only, or from neither
    assert with_defaults({"id": "a"}, {"params": {"t": 0}}) == {"id": "a", "params": {"t": 0}}
    assert with_defaults({"id": "a", "params": {"t": 1}}, {"timeout_s": 2}) == {
        "id": "a",
        "timeout_s": 2,
        "params": {"t": 1},
    }
    assert with_defaults({"id": "a"}, {"timeout_s": 2}) == {"id": "a", "timeout_s": 2}
    # empty params on both sides: no params key (the defaults' own is never copied as is)
    assert with_defaults({"id": "a"}, {"params": {}, "timeout_s": 1}) == {"id": "a", "timeout_s": 1}


def test_a_model_holds_every_key_it_was_given_and_the_defaults_of_the_rest(
    tmp_path: Path,
) -> None:
    text = HEAD.replace(
        "  - {id: b, provider: mock}\n",
        "  - {id: b, provider: mock, model: real-b, params: {temperature: 0.5},"
        " max_concurrency: 3, requests_per_minute: 120, timeout_s: 7, max_retries: 0,"
        " deadline_s: 30, adaptive_concurrency: false, price: 0, mock: {default: x}}\n",
    )
    a, b = config(tmp_path, text).models
    assert (a.id, a.provider, a.model, a.params, a.options, a.where) == (
        "a",
        "mock",
        "a",
        {},
        {},
        "models[0]",
    )
    assert (a.max_concurrency, a.requests_per_minute, a.timeout_s, a.max_retries) == (
        None,
        None,
        60.0,
        3,
    )
    assert (a.deadline_s, a.adaptive_concurrency, a.price, a.root) == (300.0, True, None, tmp_path)
    assert (b.model, b.params, b.max_concurrency, b.requests_per_minute) == (
        "real-b",
        {"temperature": 0.5},
        3,
        120,
    )
    assert (b.timeout_s, b.max_retries, b.deadline_s, b.adaptive_concurrency) == (
        7.0,
        0,
        30.0,
        False,
    )
    assert (b.price, b.options, b.where) == (
        Price(0.0, 0.0),
        {"mock": {"default": "x"}},
        "models[1]",
    )


def test_suite_defaults_reach_every_model_and_a_model_overrides_them(tmp_path: Path) -> None:
    text = "defaults: {timeout_s: 9, params: {temperature: 0}}\n" + HEAD.replace(
        "{id: b, provider: mock}", "{id: b, provider: mock, timeout_s: 2, params: {max_tokens: 9}}"
    )
    a, b = config(tmp_path, text).models
    assert (a.timeout_s, a.params) == (9.0, {"temperature": 0})
    assert (b.timeout_s, b.params) == (2.0, {"temperature": 0, "max_tokens": 9})


def test_a_price_is_read_per_million_tokens(tmp_path: Path) -> None:
    text = HEAD.replace(
        "{id: b, provider: mock}",
        "{id: b, provider: mock, price: {input_per_mtok: 3, output_per_mtok: 15}}",
    )
    assert config(tmp_path, text).models[1].price == Price(3.0, 15.0)


def test_a_variant_keeps_its_description_and_a_missing_prompt_file_is_named(
    tmp_path: Path,
) -> None:
    text = HEAD.replace("{id: v1, messages", "{id: v1, description: the plain one, messages")
    v1, v2 = config(tmp_path, text).variants
    assert (v1.description, v2.description) == ("the plain one", None)
    assert (v1.where, v1.source) == ("variants[0]", str(tmp_path / "eval.yaml"))
    text = HEAD.replace(
        '{id: v2, messages: [{role: user, content: "say {{ q }}"}]}',
        "{id: v2, prompt: prompts/gone.txt}",
    )
    error = config_error(tmp_path, text)
    assert error.message == f"prompt file not found: {tmp_path / 'prompts' / 'gone.txt'}"
    assert (error.file, error.where) == (str(tmp_path / "eval.yaml"), "variants[1].prompt")
    assert error.fix == "check the path; it is relative to the config file's folder"


def texts(variant: Variant) -> list[tuple[str, str | None]]:
    return [(m.role, p.text) for m in variant.messages for p in m.content]


def with_prompt(tmp_path: Path, entry: str) -> Variant:
    text = HEAD.replace('{id: v2, messages: [{role: user, content: "say {{ q }}"}]}', entry)
    return config(tmp_path, text).variants[1]


def test_a_yaml_prompt_file_gives_its_messages_and_description(tmp_path: Path) -> None:
    prompt = write(
        tmp_path / "prompts" / "p.YML",  # the suffix is matched in any case
        "description: from the file\nmessages:\n  - {role: system, content: be brief}\n"
        "  - {role: user, content: 'say {{ q }}'}\n",
    )
    v2 = with_prompt(tmp_path, "{id: v2, prompt: prompts/p.YML}")
    assert texts(v2) == [("system", "be brief"), ("user", "say {{ q }}")]
    assert (v2.id, v2.description, v2.source, v2.where, v2.root) == (
        "v2",
        "from the file",
        str(prompt),
        "prompt",
        tmp_path,
    )
    v2 = with_prompt(tmp_path, "{id: v2, prompt: prompts/p.YML, description: mine}")
    assert v2.description == "mine"  # the config's own description wins


def test_a_text_prompt_file_is_one_user_message(tmp_path: Path) -> None:
    prompt = write(tmp_path / "p.txt", "Answer {{ q }} briefly.\n")
    v2 = with_prompt(tmp_path, "{id: v2, prompt: p.txt, description: plain}")
    assert texts(v2) == [("user", "Answer {{ q }} briefly.\n")]
    assert (v2.description, v2.source, v2.where, v2.root) == (
        "plain",
        str(prompt),
        "prompt",
        tmp_path,
    )
    assert with_prompt(tmp_path, "{id: v2, prompt: p.txt}").description is None


@pytest.mark.usefixtures("ascii_locale")
def test_a_text_prompt_file_is_read_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    if sys.flags.utf8_mode:
        pytest.skip("in UTF-8 mode every file is read as UTF-8: the locale cannot matter")
    (tmp_path / "p.txt").write_bytes("Réponds à {{ q }} – 東京".encode())
    assert texts(with_prompt(tmp_path, "{id: v2, prompt: p.txt}")) == [
        ("user", "Réponds à {{ q }} – 東京")
    ]


def test_a_prompt_file_that_is_no_prompt_is_refused_naming_that_file_and_line(
    tmp_path: Path,
) -> None:
    prompt = write(tmp_path / "p.yaml", "description: no messages here\nmesages: []\n")
    with pytest.raises(ConfigError) as info:
        with_prompt(tmp_path, "{id: v2, prompt: p.yaml}")
    assert (info.value.file, info.value.line, info.value.column) == (str(prompt), 2, 1)
    assert "mesages" in info.value.message


# ---- pairwise comparisons ---------------------------------------------------------------------


def test_comparisons_keep_their_sides_judge_and_place(tmp_path: Path) -> None:
    by_model, by_variant = config(tmp_path, HEAD).pairwise
    assert (by_model.name, by_model.judge, by_model.where) == ("by-model", "j", "pairwise[0]")
    assert (by_model.baseline, by_model.candidate) == (Side(model="a"), Side(model="b"))
    assert by_variant.where == "pairwise[1]"
    assert (by_variant.baseline, by_variant.candidate) == (Side(variant="v1"), Side(variant="v2"))


def test_an_unknown_pairwise_judge_with_no_judges_says_none_are_known(tmp_path: Path) -> None:
    text = HEAD.replace("judges:\n  - {id: j, model: {id: jm, provider: mock}}\n", "")
    with pytest.raises(ConfigError) as info:
        config(tmp_path, text)
    assert info.value.message == "unknown judge 'j'"
    assert info.value.where == "pairwise[0].judge"
    assert info.value.fix == "define it under `judges:` (known: none)"


# ---- pairwise labels --------------------------------------------------------------------------


def test_a_label_names_its_comparison_and_keeps_its_note(tmp_path: Path) -> None:
    (label,) = labels(tmp_path, "{case: c1, comparison: by-variant, prefer: B, note: terse}")
    assert label == Label("by-variant", "c1", "candidate", "terse")
    (label,) = labels(tmp_path, "{case: c1, comparison: by-model, prefer: tie}")
    assert label == Label("by-model", "c1", "tie", None)


def test_pointwise_labels_are_passed_over_not_the_end_of_the_list(tmp_path: Path) -> None:
    text = HEAD.replace(
        "scorecard:\n  - {name: ok, type: contains, value: hi}\n",
        "scorecard:\n  - {name: ok, type: contains, value: hi}\n"
        "  - {name: good, type: llm-judge, judge: j}\n",
    )
    text += (
        "labels:\n  - {case: c1, label: pass}\n  - {case: c1, comparison: by-model, prefer: A}\n"
    )
    loaded = config(tmp_path, text)
    assert loaded.labels == [Label("by-model", "c1", "baseline", None)]
    assert [(p.criterion, p.label) for p in loaded.point_labels] == [("good", "pass")]


def test_a_label_naming_the_sides_as_the_comparison_does_is_read_as_written(
    tmp_path: Path,
) -> None:
    (label,) = labels(tmp_path, "{case: c1, baseline: a, candidate: b, prefer: A}")
    assert label == Label("by-model", "c1", "baseline", None)
    (label,) = labels(tmp_path, "{case: c1, baseline: a, prefer: B}")
    assert label == Label("by-model", "c1", "candidate", None)


@pytest.mark.parametrize(
    ("sides", "prefer", "meant"),
    [
        ("baseline: b, candidate: a", "A", "candidate"),  # A: the label's baseline, b
        ("baseline: b, candidate: a", "B", "baseline"),
        ("baseline: b", "A", "candidate"),  # one side named the other way round
        ("candidate: a", "B", "baseline"),
        ("baseline: b, candidate: a", "tie", "tie"),
        ("baseline: b, candidate: a", "b", "candidate"),  # an id is the side it names
    ],
)
def test_a_label_naming_the_sides_the_other_way_round_is_flipped(
    tmp_path: Path, sides: str, prefer: str, meant: str
) -> None:
    (label,) = labels(tmp_path, f"{{case: c1, {sides}, prefer: {prefer}}}")
    assert label == Label("by-model", "c1", meant, None)


def test_a_label_that_matches_several_comparisons_is_refused_with_their_names(
    tmp_path: Path,
) -> None:
    error = refused(tmp_path, "{case: c1, prefer: A}")
    assert error.message == "this label matches more than one pairwise comparison"
    assert (error.where, error.line, error.column) == ("labels[0]", LABELS_AT, 5)
    assert error.fix == f"name it with `comparison:` ({ENTRIES}) or give baseline/candidate"


def test_a_label_that_matches_no_comparison_is_refused_with_their_names(tmp_path: Path) -> None:
    error = refused(
        tmp_path,
        "{case: c1, comparison: by-model, prefer: A}",
        "{case: c1, comparison: x, prefer: A}",
    )
    assert error.message == "this label matches no pairwise comparison"
    assert (error.where, error.line) == ("labels[1]", LABELS_AT + 1)
    assert error.fix == f"name it with `comparison:` ({ENTRIES}) or give baseline/candidate"


def test_a_preference_label_without_comparisons_says_there_are_none(tmp_path: Path) -> None:
    text = HEAD.split("pairwise:")[0] + "labels:\n  - {case: c1, prefer: A}\n"
    with pytest.raises(ConfigError) as info:
        config(tmp_path, text)
    assert info.value.message == "this label matches no pairwise comparison"
    assert (
        info.value.fix
        == "name it with `comparison:` (pairwise entries: none) or give baseline/candidate"
    )


def test_a_preference_that_is_no_answer_is_refused_at_its_value(tmp_path: Path) -> None:
    error = refused(tmp_path, "{case: c1, comparison: by-model, prefer: maybe}")
    assert error.message == (
        "prefer 'maybe' is none of A, B, tie, baseline, candidate or a compared model or variant id"
    )
    assert (error.where, error.line, error.column) == ("labels[0].prefer", LABELS_AT, 46)
    assert error.fix == (
        "say which answer the labeller preferred: A (baseline), B (candidate), tie, "
        "or the preferred side's id"
    )


def test_a_preferred_id_of_another_comparison_names_neither_side_at_its_value(
    tmp_path: Path,
) -> None:
    error = refused(tmp_path, "{case: c1, comparison: by-model, prefer: v1}")
    assert error.message == "prefer 'v1' names neither side of pairwise 'by-model'"
    assert (error.where, error.line, error.column) == ("labels[0].prefer", LABELS_AT, 46)


# ---- pointwise labels -------------------------------------------------------------------------

JUDGED = (
    HEAD.split("pairwise:")[0]
    .replace("jm, provider: mock}}", "jm, provider: mock}, scale: {min: 1, max: 5}}")
    .replace("scorecard:\n", "scorecard:\n  - {name: good, type: llm-judge, judge: j}\n")
)
KIND = "  - {name: kind, type: llm-judge, judge: j}\n"
GOOD = "name it with `criterion:` (llm-judge criteria: good)"


def point_labels(tmp_path: Path, *entries: str, text: str = JUDGED) -> list[PointLabel]:
    body = text + "labels:\n" + "".join(f"  - {e}\n" for e in entries)
    return config(tmp_path, body).point_labels


def point_refused(tmp_path: Path, *entries: str, text: str = JUDGED) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        point_labels(tmp_path, *entries, text=text)
    return info.value


def test_pointwise_labels_take_the_only_judged_criterion_and_keep_their_note(
    tmp_path: Path,
) -> None:
    assert point_labels(
        tmp_path,
        "{case: c1, label: pass, note: right}",
        "{case: c1, label: 1}",
        "{case: c1, criterion: good, label: 5}",
        "{case: c1, label: fail}",
    ) == [
        PointLabel("good", "c1", "pass", "right"),
        PointLabel("good", "c1", 1, None),
        PointLabel("good", "c1", 5, None),
        PointLabel("good", "c1", "fail", None),
    ]


def test_a_pointwise_label_after_a_preference_label_is_read(tmp_path: Path) -> None:
    text = (
        JUDGED + "pairwise:\n  - {name: p, judge: j, baseline: {model: a}, candidate: {model: b}}\n"
    )
    loaded = point_labels(tmp_path, "{case: c1, prefer: A}", "{case: c1, label: pass}", text=text)
    assert loaded == [PointLabel("good", "c1", "pass", None)]


def test_a_pointwise_label_for_an_unknown_case_is_refused_at_its_case(tmp_path: Path) -> None:
    error = point_refused(tmp_path, "{case: c1, label: pass}", "{case: cx, label: pass}")
    assert error.message == "label for unknown case 'cx'"
    assert (error.where, error.line) == ("labels[1].case", JUDGED.count("\n") + 3)
    assert error.fix == "use a case id from `cases:`"


def test_a_label_for_an_unknown_criterion_suggests_the_close_one(tmp_path: Path) -> None:
    error = point_refused(tmp_path, "{case: c1, criterion: goood, label: pass}")
    assert error.message == "label for unknown llm-judge criterion 'goood'"
    assert error.where == "labels[0].criterion"
    assert error.fix == f"did you mean 'good'? {GOOD}"
    error = point_refused(tmp_path, "{case: c1, criterion: tone, label: pass}")
    assert error.fix == GOOD


def test_a_label_that_names_no_criterion_among_several_is_refused_at_its_label(
    tmp_path: Path,
) -> None:
    text = JUDGED.replace("scorecard:\n", "scorecard:\n" + KIND)
    error = point_refused(tmp_path, "{case: c1, label: pass}", text=text)
    assert error.message == "this label names no llm-judge criterion"
    assert error.where == "labels[0].label"
    assert error.fix == "name it with `criterion:` (llm-judge criteria: good, kind)"


def test_a_pointwise_label_without_judged_criteria_says_there_are_none(tmp_path: Path) -> None:
    text = JUDGED.replace("  - {name: good, type: llm-judge, judge: j}\n", "")
    error = point_refused(tmp_path, "{case: c1, label: pass}", text=text)
    assert error.message == "this label names no llm-judge criterion"
    assert error.fix == "name it with `criterion:` (llm-judge criteria: none)"


def test_a_word_label_must_be_pass_or_fail(tmp_path: Path) -> None:
    error = point_refused(tmp_path, "{case: c1, label: PASSED}")
    assert error.message == "label 'PASSED' is neither pass nor fail"
    assert (error.where, error.line) == ("labels[0].label", JUDGED.count("\n") + 2)
    assert error.fix == "did you mean 'pass'? give pass, fail or a score from 1 to 5"
    error = point_refused(tmp_path, "{case: c1, label: meh}")
    assert error.fix == "give pass, fail or a score from 1 to 5"


@pytest.mark.parametrize("value", ["0.5", "5.5", "-1"])
def test_a_score_label_outside_the_judges_scale_is_refused(tmp_path: Path, value: str) -> None:
    error = point_refused(tmp_path, f"{{case: c1, label: {value}}}")
    assert error.message == f"label {float(value):g} is outside the judge's scale 1..5"
    assert error.where == "labels[0].label"
    assert error.fix == "give pass, fail or a score from 1 to 5"


def test_a_missing_file_of_an_inline_case_names_the_config_and_the_key(tmp_path: Path) -> None:
    text = HEAD.replace(
        "  - {id: c1, vars: {q: hi}}\n", "  - {id: c1, vars: {q: hi}, files: {photo: gone.png}}\n"
    )
    error = config_error(tmp_path, text)
    assert (error.file, error.where) == (str(tmp_path / "eval.yaml"), "cases[0].files.photo")
    assert (
        error.message
        == f"cannot read the attached file {tmp_path / 'gone.png'}: No such file or directory"
    )


def test_two_cases_with_one_id_are_refused_naming_both(tmp_path: Path) -> None:
    text = HEAD.replace(
        "  - {id: c1, vars: {q: hi}}\n",
        "  - {id: c1, vars: {q: hi}}\n  - {id: c1, vars: {q: ho}}\n",
    )
    error = config_error(tmp_path, text)
    assert error.message == "duplicate case id 'c1' (eval.yaml cases[1] and eval.yaml cases[0])"
    assert (error.file, error.where) == (str(tmp_path / "eval.yaml"), "cases")
    assert error.fix == "give every case a unique id"


def test_a_criterion_holds_its_keys_the_defaults_of_the_rest_and_its_options(
    tmp_path: Path,
) -> None:
    text = HEAD.replace(
        "  - {name: ok, type: contains, value: hi}\n",
        "  - {name: ok, type: contains, value: hi}\n"
        "  - {name: strict, type: exact, weight: 2, required: false, threshold: 0.9,"
        " description: all of it}\n",
    )
    ok, strict = config(tmp_path, text).scorecard
    assert (ok.name, ok.type, ok.weight, ok.required, ok.threshold) == (
        "ok",
        "contains",
        1.0,
        True,
        0.5,
    )
    assert (ok.options, ok.where) == ({"value": "hi"}, "scorecard[0]")
    assert (strict.weight, strict.required, strict.threshold) == (2.0, False, 0.9)
    assert (strict.options, strict.where) == ({}, "scorecard[1]")


def test_two_criteria_with_one_name_are_refused_at_the_second(tmp_path: Path) -> None:
    text = HEAD.replace(
        "  - {name: ok, type: contains, value: hi}\n",
        "  - {name: ok, type: contains, value: hi}\n  - {name: ok, type: exact}\n",
    )
    error = config_error(tmp_path, text)
    assert error.message == "duplicate name 'ok' (also at scorecard[0])"
    assert (error.where, error.fix) == (
        "scorecard[1].name",
        "give every entry of scorecard a unique name",
    )


def test_a_scorecard_whose_every_weight_is_zero_is_refused(tmp_path: Path) -> None:
    text = HEAD.replace("value: hi}", "value: hi, weight: 0}")
    error = config_error(tmp_path, text)
    assert (error.message, error.where) == ("every criterion has weight 0", "scorecard")
    assert (error.file, error.line) == (str(tmp_path / "eval.yaml"), 10)
    assert error.fix == "give at least one criterion a positive weight"


def test_calibration_holds_each_key_given_and_the_documented_defaults(tmp_path: Path) -> None:
    # docs/configuration.md: min_kappa 0.6, min_labels 20, max_flip_rate 0.30, flag
    assert config(tmp_path, HEAD).calibration == Calibration(0.6, 20, 0.30, "flag")
    given = (
        "calibration: {min_kappa: 0.8, min_labels: 5, max_flip_rate: 0.1, on_below_floor: fail}\n"
    )
    assert config(tmp_path, HEAD + given).calibration == Calibration(0.8, 5, 0.1, "fail")
    # the model's own defaults are the documented ones too (a config read some other way)
    assert Calibration() == Calibration(0.6, 20, 0.30, "flag")


WHOLE = """\
name: whole
description: every field of the config
privacy: {no_look: true}
settings: {concurrency: 3}
thresholds: {min_pass_rate: 0.5}
models:
  - {id: a, provider: mock}
variants:
  - {id: inline, messages: [{role: user, content: "{{ q }}"}]}
  - id: filed
    prompt: p.txt
    output_schema: {schema: {type: object}}
cases:
  - {id: c1, vars: {q: hi}}
scorecard:
  - {name: ok, type: contains, value: hi}
"""


def test_a_config_keeps_its_fields_and_hashes_each_variants_messages(tmp_path: Path) -> None:
    write(tmp_path / "p.txt", "from the file: {{ q }}")
    cfg = config(tmp_path, WHOLE)
    assert (cfg.name, cfg.description, cfg.settings, cfg.thresholds, cfg.no_look) == (
        "whole", "every field of the config", {"concurrency": 3}, {"min_pass_rate": 0.5}, True,
    )  # fmt: skip
    # the hash covers each variant's messages as rendered from its file, and its output
    text = [{"type": "text", "text": "{{ q }}"}]
    snapshot = {k: v for k, v in cfg.raw.items() if k not in NOT_HASHED}
    snapshot["variants"] = [
        {"id": "inline", "messages": [["user", text]]},
        {
            "id": "filed",
            "messages": [["user", [{"type": "text", "text": "from the file: {{ q }}"}]]],
            "output": cfg.variants[1].output.to_dict(),  # type: ignore[union-attr]
        },
    ]
    assert cfg.config_hash == canonical_hash(snapshot)
    # an error about the config is placed at its line (the YAML tree is kept)
    error = cfg.locate_error(ConfigError("x", file=str(cfg.path), where="scorecard[0].value"))
    assert (error.line, error.column) == (WHOLE.count("\n"), 39)


def test_the_dataset_hash_follows_the_cases_and_nothing_else(tmp_path: Path) -> None:
    base = config(tmp_path, HEAD).dataset_hash
    assert config(tmp_path, HEAD.replace("name: ok", "name: fine")).dataset_hash == base
    assert config(tmp_path, HEAD.replace("{q: hi}", "{q: ho}")).dataset_hash != base


def test_a_config_without_a_name_is_named_after_its_folder_and_keeps_its_judges(
    tmp_path: Path,
) -> None:
    cfg = load_config(write(tmp_path / "support-bot" / "eval.yaml", HEAD))
    assert cfg.name == "support-bot"
    assert [j.id for j in cfg.judges] == ["j"] and cfg.sources == []


def test_the_dataset_hash_of_a_plain_config_is_the_hash_of_its_rows(tmp_path: Path) -> None:
    # stored in every runs row and compared across versions: its formula may not drift
    cfg = config(tmp_path, HEAD)
    assert cfg.dataset_hash == canonical_hash(dataset_rows(cfg.cases))


def test_a_datasource_is_part_of_the_dataset_hash(tmp_path: Path) -> None:
    def sourced(query: str) -> EvalConfig:
        source = f'cases:\n  - {{source: duckdb, params: {{query: "{query}"}}}}\n'
        plain = HEAD.split("judges:\n")[0]  # no pairwise: it needs every case in the config
        return config(tmp_path, plain.replace("cases:\n  - {id: c1, vars: {q: hi}}\n", source))

    one, other = sourced("SELECT 1 AS id, 'a' AS q"), sourced("SELECT 2 AS id, 'b' AS q")
    assert [(s.name, s.where) for s in one.sources] == [("duckdb", "cases[0]")]
    assert one.dataset_hash != other.dataset_hash  # no case of their own: only the sources differ
