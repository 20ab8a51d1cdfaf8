"""Loading eval.yaml into a config (evalwh/config/loader.py), and the defaults it fills in:
suite defaults under each model, the fields of a model, variant, criterion and judge (its scale,
the folder its files resolve in), prompt files, the config and dataset hashes, pairwise
comparisons and the human labels that name them (pairwise and pointwise), and every refusal
with its message, file, place, line and fix.

Most tests read configs in-process and pin each value, message, place and fix: a refusal
checked only through the CLI in a subprocess is out of mutation testing's sight. A few also go
through `evalwh run` (tests.builders.expect_error: exit 2, the fix shown, nothing written).

The config and dataset hashes a run stores. --resume and --shard refuse to continue a run
whose hashes differ from the config's, so the hashes must (a) change with every field of a
case and with what the config asks, and (b) stay the same for the same files across releases:
a run started before an upgrade is resumed after it. The pinned values (CONFIG_HASH,
DATASET_HASH) are what this release computes; a change to them is a change users see (every
earlier run refuses --resume), so it needs a CHANGELOG entry, not a new pin.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from datetime import date
from pathlib import Path

import pytest

import evalwh
from evalwh import load_config
from evalwh.api import validate
from evalwh.config.datasets import dataset_rows
from evalwh.config.loader import NOT_HASHED, canonical_hash, with_defaults
from evalwh.config.model import (
    Calibration,
    EvalConfig,
    Label,
    PointLabel,
    Price,
    Side,
    Variant,
)
from evalwh.errors import ConfigError
from evalwh.providers.base import ProviderError
from tests.builders import (
    BASE,
    DATASOURCE_JUDGED,
    GARBAGE_JUDGE_CONFIG,
    ROWS_CONFIG,
    Counting,
    expect_error,
    stored,
)
from tests.builders import eval_config as config
from tests.config.test_datasets import TWO_MOCKS
from tests.conftest import PAIRWISE, run_cli, write


# -- config/loader.py: the default max_retries (3) -------------------------------------------
@pytest.mark.usefixtures("counting")
def test_max_retries_left_unset_retries_a_transient_error_three_times(tmp_path: Path) -> None:
    # bug: the loader's default max_retries 3 -> 0 (no test left it unset)
    Counting.behaviour["c0"] = ProviderError("overloaded", retryable=True, retry_after=0.0)
    cfg = config(tmp_path, "  - {id: a, provider: counting}", 1)
    assert load_config(cfg).models[0].max_retries == 3
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert [attempt for _, _, attempt in Counting.calls] == [1, 2, 3, 4]
    assert result.totals["n_errors"] == 1 and result.stats["retries"] == 3
    assert stored(tmp_path / "out", "SELECT attempts FROM cases") == [{"attempts": 4}]


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


def read_config(tmp_path: Path, text: str) -> EvalConfig:
    return load_config(write(tmp_path / "eval.yaml", text))


def config_error(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        read_config(tmp_path, text)
    return info.value


def labels(tmp_path: Path, *entries: str) -> list[Label]:
    text = HEAD + "labels:\n" + "".join(f"  - {e}\n" for e in entries)
    return read_config(tmp_path, text).labels


def refused(tmp_path: Path, *entries: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        labels(tmp_path, *entries)
    return info.value


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
    a, b = read_config(tmp_path, text).models
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
    a, b = read_config(tmp_path, text).models
    assert (a.timeout_s, a.params) == (9.0, {"temperature": 0})
    assert (b.timeout_s, b.params) == (2.0, {"temperature": 0, "max_tokens": 9})


def test_a_price_is_read_per_million_tokens(tmp_path: Path) -> None:
    text = HEAD.replace(
        "{id: b, provider: mock}",
        "{id: b, provider: mock, price: {input_per_mtok: 3, output_per_mtok: 15}}",
    )
    assert read_config(tmp_path, text).models[1].price == Price(3.0, 15.0)


def test_a_variant_keeps_its_description_and_a_missing_prompt_file_is_named(
    tmp_path: Path,
) -> None:
    text = HEAD.replace("{id: v1, messages", "{id: v1, description: the plain one, messages")
    v1, v2 = read_config(tmp_path, text).variants
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
    return read_config(tmp_path, text).variants[1]


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


def test_comparisons_keep_their_sides_judge_and_place(tmp_path: Path) -> None:
    by_model, by_variant = read_config(tmp_path, HEAD).pairwise
    assert (by_model.name, by_model.judge, by_model.where) == ("by-model", "j", "pairwise[0]")
    assert (by_model.baseline, by_model.candidate) == (Side(model="a"), Side(model="b"))
    assert by_variant.where == "pairwise[1]"
    assert (by_variant.baseline, by_variant.candidate) == (Side(variant="v1"), Side(variant="v2"))


def test_an_unknown_pairwise_judge_with_no_judges_says_none_are_known(tmp_path: Path) -> None:
    text = HEAD.replace("judges:\n  - {id: j, model: {id: jm, provider: mock}}\n", "")
    with pytest.raises(ConfigError) as info:
        read_config(tmp_path, text)
    assert info.value.message == "unknown judge 'j'"
    assert info.value.where == "pairwise[0].judge"
    assert info.value.fix == "define it under `judges:` (known: none)"


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
    loaded = read_config(tmp_path, text)
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
        read_config(tmp_path, text)
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


JUDGED = (
    HEAD.split("pairwise:")[0]
    .replace("jm, provider: mock}}", "jm, provider: mock}, scale: {min: 1, max: 5}}")
    .replace("scorecard:\n", "scorecard:\n  - {name: good, type: llm-judge, judge: j}\n")
)


KIND = "  - {name: kind, type: llm-judge, judge: j}\n"


LABEL_FIX = "name it with `criterion:` (llm-judge criteria: good)"


def point_labels(tmp_path: Path, *entries: str, text: str = JUDGED) -> list[PointLabel]:
    body = text + "labels:\n" + "".join(f"  - {e}\n" for e in entries)
    return read_config(tmp_path, body).point_labels


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


def test_a_pointwise_label_naming_an_answer_grades_that_answer(tmp_path: Path) -> None:
    """A label with variant/model/repeat grades one answer (repeat 0 by default); one naming
    neither is a label of the case, as before."""
    assert point_labels(
        tmp_path,
        "{case: c1, variant: v2, model: b, repeat: 1, label: 4}",
        "{case: c1, variant: v1, model: a, label: pass}",
        "{case: c1, label: fail}",
    ) == [
        PointLabel("good", "c1", 4, None, "v2", "b", 1),
        PointLabel("good", "c1", "pass", None, "v1", "a", 0),
        PointLabel("good", "c1", "fail", None),
    ]


@pytest.mark.parametrize(
    ("entry", "message", "where", "fix"),
    [
        (
            "{case: c1, variant: v1, label: pass}",
            "this label of one answer names no model",
            "labels[0]",
            "name the answer's model with `model:` (models: a, b)",
        ),
        (
            "{case: c1, variant: v3, model: a, label: pass}",
            "label for unknown variant 'v3'",
            "labels[0].variant",
            "variants: v1, v2",
        ),
    ],
)
def test_a_label_of_one_answer_must_name_an_answer_of_the_matrix(
    tmp_path: Path, entry: str, message: str, where: str, fix: str
) -> None:
    error = point_refused(tmp_path, entry)
    assert (error.message, error.where, error.fix) == (message, where, fix)


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
    assert error.fix == f"did you mean 'good'? {LABEL_FIX}"
    error = point_refused(tmp_path, "{case: c1, criterion: tone, label: pass}")
    assert error.fix == LABEL_FIX


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
    ok, strict = read_config(tmp_path, text).scorecard
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
    assert read_config(tmp_path, HEAD).calibration == Calibration(0.6, 20, 0.30, "flag")
    given = (
        "calibration: {min_kappa: 0.8, min_labels: 5, max_flip_rate: 0.1, on_below_floor: fail}\n"
    )
    assert read_config(tmp_path, HEAD + given).calibration == Calibration(0.8, 5, 0.1, "fail")
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
    cfg = read_config(tmp_path, WHOLE)
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
    base = read_config(tmp_path, HEAD).dataset_hash
    assert read_config(tmp_path, HEAD.replace("name: ok", "name: fine")).dataset_hash == base
    assert read_config(tmp_path, HEAD.replace("{q: hi}", "{q: ho}")).dataset_hash != base


def test_a_config_without_a_name_is_named_after_its_folder_and_keeps_its_judges(
    tmp_path: Path,
) -> None:
    cfg = load_config(write(tmp_path / "support-bot" / "eval.yaml", HEAD))
    assert cfg.name == "support-bot"
    assert [j.id for j in cfg.judges] == ["j"] and cfg.sources == []


def test_the_dataset_hash_of_a_plain_config_is_the_hash_of_its_rows(tmp_path: Path) -> None:
    # stored in every runs row and compared across versions: its formula may not drift
    cfg = read_config(tmp_path, HEAD)
    assert cfg.dataset_hash == canonical_hash(dataset_rows(cfg.cases))


def test_a_datasource_is_part_of_the_dataset_hash(tmp_path: Path) -> None:
    def sourced(query: str) -> EvalConfig:
        source = f'cases:\n  - {{source: duckdb, params: {{query: "{query}"}}}}\n'
        plain = HEAD.split("judges:\n")[0]  # no pairwise: it needs every case in the config
        return read_config(tmp_path, plain.replace("cases:\n  - {id: c1, vars: {q: hi}}\n", source))

    one, other = sourced("SELECT 1 AS id, 'a' AS q"), sourced("SELECT 2 AS id, 'b' AS q")
    assert [(s.name, s.where) for s in one.sources] == [("duckdb", "cases[0]")]
    assert one.dataset_hash != other.dataset_hash  # no case of their own: only the sources differ


JUDGES_CONFIG = """\
name: judged
models:
  - id: m
    provider: mock
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - id: c1
    vars: {q: hi}
scorecard:
  - name: same
    type: exact
judges:
  - id: j
    rubric: Is it right?
    model: {id: jm, provider: mock}
"""


def load_judged(tmp_path: Path, extra: str = "") -> object:
    path = tmp_path / "sub" / "eval.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(JUDGES_CONFIG + extra, encoding="utf-8")
    return load_config(path)


def test_a_judge_without_a_scale_scores_from_0_to_1_and_resolves_files_in_the_configs_folder(
    tmp_path: Path,
) -> None:
    judge = load_judged(tmp_path).judges[0]  # type: ignore[attr-defined]
    assert judge.scale == (0.0, 1.0)
    # a judge model's relative files (a command provider's script, an image) are read from the
    # config's folder, as the answering models' are, not from wherever evalwh was started
    assert judge.model.root == tmp_path / "sub"
    assert judge.model.where == "judges[0].model"


@pytest.mark.parametrize("scale", ["{min: 3, max: 3}", "{min: 5, max: 1}"])
def test_a_scale_whose_max_is_not_above_its_min_is_a_config_error(
    tmp_path: Path, scale: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_judged(tmp_path, f"    scale: {scale}\n")
    error = info.value
    assert error.message == "the scale's max must be above its min"
    assert (error.file, error.where, error.fix) == (
        str(tmp_path / "sub" / "eval.yaml"),
        "judges[0].scale",
        "e.g. scale: {min: 1, max: 5}",
    )


def test_a_scale_of_one_to_five_is_kept(tmp_path: Path) -> None:
    judge = load_judged(tmp_path, "    scale: {min: 1, max: 5}\n").judges[0]  # type: ignore[attr-defined]
    assert judge.scale == (1.0, 5.0)


PAIRWISE_BASE = ROWS_CONFIG.replace(
    "  - {id: m, provider: mock, mock: {default: hi}}",
    "  - {id: m, provider: mock, mock: {default: hi}}\n  - {id: n, provider: mock}",
) + (
    "  - {name: alpha, type: contains, value: a}\n"
    "judges:\n  - {id: j, model: {id: jm, provider: mock}}\n  - {id: k, model: {id: km, provider: mock}}\n"
    "pairwise:\n"
)


PAIRWISE_GOOD = "  - {name: cmp, judge: j, baseline: {model: m}, candidate: {model: n, variant: v}, require: [has]}\n"


def load_pairwise(tmp_path: Path, pairwise: str) -> object:
    (tmp_path / "eval.yaml").write_text(PAIRWISE_BASE + pairwise, encoding="utf-8")
    return load_config(tmp_path / "eval.yaml")


def test_a_comparison_keeps_its_judge_sides_and_required_criteria(tmp_path: Path) -> None:
    config = load_pairwise(tmp_path, PAIRWISE_GOOD)
    (cmp,) = config.pairwise  # type: ignore[attr-defined]
    assert (cmp.name, cmp.judge, cmp.baseline, cmp.candidate, cmp.require) == (
        "cmp", "j", Side(model="m", variant=None), Side(model="n", variant="v"), ("has",),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "message", "where", "fix"),
    [
        (PAIRWISE_GOOD.replace("judge: j", "judge: nobody"), "unknown judge 'nobody'",
         "pairwise[0].judge", "define it under `judges:` (known: j, k)"),
        (PAIRWISE_GOOD.replace("{model: m}", "{model: ghost}"), "unknown model 'ghost'",
         "pairwise[0].baseline.model", "use one of: m, n"),
        (PAIRWISE_GOOD.replace("variant: v}", "variant: w}"), "unknown variant 'w'",
         "pairwise[0].candidate.variant", "use one of: v"),
        (PAIRWISE_GOOD.replace("{model: n, variant: v}", "{model: m}"),
         "baseline and candidate are the same side", "pairwise[0]",
         "compare two different models or variants"),
        (PAIRWISE_GOOD.replace("require: [has]", "require: [has, nope]"), "unknown criterion 'nope'",
         "pairwise[0].require", "use scorecard criterion names: alpha, has"),
        (PAIRWISE_GOOD + PAIRWISE_GOOD, "duplicate pairwise name", "pairwise", "give each a unique name"),
    ],
)  # fmt: skip
def test_a_bad_pairwise_entry_is_refused_at_its_line(
    tmp_path: Path, entry: str, message: str, where: str, fix: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_pairwise(tmp_path, entry)
    error = refused.value
    assert (error.message, error.where, error.fix) == (message, where, fix)
    assert error.file == str(tmp_path / "eval.yaml")
    assert error.line is not None and error.line > PAIRWISE_BASE.count("\n") - 2


def test_a_label_matches_a_comparison_only_when_every_side_it_names_is_that_sides() -> None:
    """A label's baseline and candidate must both name the comparison's sides (each way
    round when swapped); naming one right and one wrong, or only a wrong one, matches
    nothing; naming neither matches every comparison."""
    from evalwh.config.loader import _sides_match
    from evalwh.config.model import Comparison, Side

    c = Comparison("a-vs-b", "j", baseline=Side(model="a"), candidate=Side(model="b"))
    assert _sides_match({"baseline": "a", "candidate": "b"}, c, swapped=False)
    assert not _sides_match({"baseline": "x", "candidate": "b"}, c, swapped=False)
    assert not _sides_match({"baseline": "a", "candidate": "x"}, c, swapped=False)
    assert not _sides_match({"candidate": "x"}, c, swapped=False)  # baseline not named
    assert _sides_match({"candidate": "b"}, c, swapped=False)
    assert _sides_match({"baseline": "b", "candidate": "a"}, c, swapped=True)
    assert not _sides_match({"baseline": "a", "candidate": "b"}, c, swapped=True)
    assert _sides_match({}, c, swapped=False) and _sides_match({}, c, swapped=True)


def test_a_prefer_that_names_neither_side_is_reported_at_its_line(tmp_path: Path) -> None:
    from evalwh.config.loader import _prefer
    from evalwh.config.model import Comparison, Side

    c = Comparison("a-vs-b", "j", baseline=Side(model="a"), candidate=Side(model="b"))
    where = {"file": "eval.yaml", "where": "labels[2].prefer", "line": 31, "column": 14}
    with pytest.raises(ConfigError) as caught:
        _prefer({"prefer": "zzz"}, c, where, flip=False)
    error = caught.value
    assert (error.file, error.where, error.line, error.column) == (
        "eval.yaml",
        "labels[2].prefer",
        31,
        14,
    )
    assert _prefer({"prefer": "A"}, c, where, flip=True) == "candidate"
    assert _prefer({"prefer": "b"}, c, where, flip=True) == "candidate"  # an id is no letter


def test_a_label_for_an_unknown_case_is_reported_at_its_case_with_the_fix(tmp_path: Path) -> None:

    from evalwh.config.loader import load_config

    example = Path(__file__).resolve().parents[2] / "examples" / "pairwise"
    shutil.copytree(example, tmp_path / "pairwise")
    path = tmp_path / "pairwise" / "eval.yaml"
    text = path.read_text(encoding="utf-8")
    line = text.splitlines().index("  - {case: q03, prefer: B}") + 1
    path.write_text(text.replace("{case: q03,", "{case: nope,"), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    error = caught.value
    assert error.message == "label for unknown case 'nope'"
    assert (error.where, error.line, error.column) == ("labels[2].case", line, 12)
    assert error.fix == "use a case id from `cases:`"


def test_unknown_provider_lists_the_known_ones(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE.replace("provider: mock", "provider: mok"))
    expect_error(cfg, "models[0].provider", "unknown provider 'mok'", "mock")


def test_duplicate_ids(tmp_path: Path) -> None:
    text = BASE + "  - name: ok\n    type: exact\n"
    expect_error(write(tmp_path / "eval.yaml", text), "duplicate name 'ok'")


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


def test_a_pairwise_comparison_over_a_datasource_is_refused_at_its_key(tmp_path: Path) -> None:
    write(tmp_path / "s" / "0.jsonl", '{"id": "r1", "q": "a"}\n')
    cfg = write(
        tmp_path / "eval.yaml",
        DATASOURCE_JUDGED.replace("{id: m, provider", "{id: m2, provider: mock}, {id: m, provider")
        + "pairwise:\n  - {name: p, judge: j, baseline: {model: m}, candidate: {model: m2}}\n",
    )
    with pytest.raises(ConfigError) as info:
        evalwh.load_config(cfg)
    error = info.value
    assert (error.where, error.line, error.column) == ("pairwise", 11, 3)  # its list
    assert error.message.startswith("pairwise comparisons need every case in the config")
    assert error.fix is not None and "`evalwh compare A B`" in error.fix


def test_suite_defaults_apply_to_every_model_and_a_models_own_value_wins(tmp_path: Path) -> None:
    from tests.conftest import write

    cfg = write(
        tmp_path / "eval.yaml",
        TWO_MOCKS
        + "defaults: {params: {temperature: 0, max_tokens: 256}, timeout_s: 20, max_retries: 1}\n"
        + "cases:\n  - {id: c1, vars: {q: hi}, expected: hi}\n",
    )
    loaded = evalwh.load_config(cfg)
    a, b = loaded.models
    assert a.params == {"temperature": 0, "max_tokens": 64}  # merged key by key
    assert b.params == {"temperature": 0.7, "max_tokens": 256}
    assert (a.timeout_s, b.timeout_s, a.max_retries, b.max_retries) == (20.0, 5.0, 1, 1)
    # without defaults, nothing changes
    plain = write(tmp_path / "plain.yaml", TWO_MOCKS + "cases:\n  - {id: c1, vars: {q: hi}}\n")
    a, b = evalwh.load_config(plain).models
    assert a.params == {"max_tokens": 64} and a.timeout_s == 60.0
    # an unknown key under defaults is an error naming it
    bad = write(
        tmp_path / "bad.yaml", TWO_MOCKS + "defaults: {temprature: 0}\ncases:\n  - {id: c1}\n"
    )
    with pytest.raises(ConfigError, match="temprature"):
        evalwh.load_config(bad)


def test_unknown_judge_is_a_config_error(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", GARBAGE_JUDGE_CONFIG.replace("judge: j}", "judge: nobody}"))
    result = run_cli("validate", str(cfg), cwd=tmp_path)
    assert result.returncode == 2 and "unknown judge 'nobody'" in result.stderr


def _labelled(tmp_path: Path, labels: str) -> Path:

    target = tmp_path / "pw"
    shutil.copytree(
        PAIRWISE,
        target,
        ignore=shutil.ignore_patterns(".evalwh", "__pycache__"),
        dirs_exist_ok=True,
    )
    cfg = target / "eval.yaml"
    text = cfg.read_text()
    head, _, _ = text.partition("\nlabels:\n")
    cfg.write_text(head + "\nlabels:\n" + labels)
    return cfg


@pytest.mark.parametrize(
    ("label", "stored"),
    [
        ("{case: q01, prefer: B}", "candidate"),
        ("{case: q01, prefer: A}", "baseline"),
        ("{case: q01, prefer: tie}", "tie"),
        ("{case: q01, baseline: small, candidate: large, prefer: candidate}", "candidate"),
        ("{case: q01, baseline: small, candidate: large, prefer: baseline}", "baseline"),
        ("{case: q01, prefer: large}", "candidate"),
        ("{case: q01, prefer: small}", "baseline"),
        # the label names the sides the other way round: its preference is turned with them
        ("{case: q01, baseline: large, candidate: small, prefer: candidate}", "baseline"),
        ("{case: q01, baseline: large, candidate: small, prefer: A}", "candidate"),
        ("{case: q01, baseline: large, candidate: small, prefer: large}", "candidate"),
        ("{case: q01, baseline: large, candidate: small, prefer: tie}", "tie"),
    ],
)
def test_labels_name_sides_by_a_b_role_or_model_id(tmp_path: Path, label: str, stored: str) -> None:
    from evalwh.config.loader import load_config

    cfg = load_config(_labelled(tmp_path, f"  - {label}\n"))
    assert [(lb.case_id, lb.prefer) for lb in cfg.labels] == [("q01", stored)]


def test_a_label_preferring_no_side_is_an_error_naming_the_sides(tmp_path: Path) -> None:
    from evalwh.config.loader import load_config
    from evalwh.errors import ConfigError

    with pytest.raises(ConfigError, match="prefer 'medium' is none of") as exc:
        load_config(_labelled(tmp_path, "  - {case: q01, prefer: medium}\n"))
    assert exc.value.where == "labels[0].prefer" and exc.value.line is not None
    with pytest.raises(ConfigError, match="matches no pairwise comparison"):
        load_config(
            _labelled(tmp_path, "  - {case: q01, baseline: small, candidate: nope, prefer: A}\n")
        )


def test_a_label_preferring_a_side_of_another_comparison_lists_this_ones_sides(
    tmp_path: Path,
) -> None:
    from evalwh.config.loader import load_config
    from evalwh.config.model import Side
    from evalwh.errors import ConfigError

    cfg = _labelled(tmp_path, "  - {case: q01, comparison: large-vs-small, prefer: plain}\n")
    second = (
        "  - name: by-variant\n    judge: fair\n"
        "    baseline: {variant: plain, model: small}\n    candidate: {variant: plain, model: large}\n"
    )
    text = cfg.read_text().replace("\ncalibration:", second + "\ncalibration:", 1)
    cfg.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(cfg)  # 'plain' is a side of by-variant only
    assert exc.value.message == "prefer 'plain' names neither side of pairwise 'large-vs-small'"
    assert exc.value.fix == (
        "use A, B, tie, baseline, candidate, or a side's id: small (baseline), large (candidate)"
    )
    assert Side(model="large", variant="plain").describe() == "plain × large"
    assert Side(variant="plain").describe() == "plain"


HASHED_CONFIG = """\
name: pinned
models:
  - {id: m, provider: mock, mock: {default: "red"}}
variants:
  - id: v
    messages:
      - role: user
        content: [{text: "Colour of {{ thing }} on {{ day }}?"}, {image: "{{ files.photo }}"}]
cases:
  - id: pic
    vars: {thing: ball, day: 2026-01-02}
    expected: red
    metadata: {kind: primary, since: 2025-12-31}
    human_label: pass
    files: {photo: photo.png}
  - id: code
    vars: {thing: cube, day: 2026-01-03}
    check: {run: "true"}
scorecard:
  - {name: colour, type: contains}
"""


PHOTO = b"\x89PNG\r\n\x1a\n" + b"x" * 36


CONFIG_HASH = (
    "8cea712e5ba5b1df7935e3f4dda46d36845c520df60a5c485d00a4f4b07b821f"  # pragma: allowlist secret
)


DATASET_HASH = (
    "9ba58aff67af5797b425ba1a488a4e805d2d4deab5df305de1bb266a22ac7155"  # pragma: allowlist secret
)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hashes(folder: Path, config: str = HASHED_CONFIG, photo: bytes = PHOTO) -> tuple[str, str]:
    write(folder / "eval.yaml", config)
    (folder / "photo.png").write_bytes(photo)
    loaded = load_config(folder / "eval.yaml")
    return loaded.config_hash, loaded.dataset_hash


def test_the_hashes_of_the_same_files_are_the_same_in_every_folder_and_release(
    tmp_path: Path,
) -> None:
    # YAML dates (vars and metadata above) are hashed as their ISO text.
    assert hashes(tmp_path / "a") == (CONFIG_HASH, DATASET_HASH)
    assert hashes(tmp_path / "b" / "deeper") == (CONFIG_HASH, DATASET_HASH)


def test_canonical_hash_is_sha256_of_compact_sorted_json() -> None:
    # the form the stored hashes have always had; a date is hashed as its ISO text
    assert canonical_hash({"b": [1, "x"], "a": None}) == sha256(b'{"a":null,"b":[1,"x"]}')
    assert canonical_hash({"when": date(2026, 1, 2)}) == sha256(b'{"when":"2026-01-02"}')


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  - id: pic\n", "  - id: pic2\n"),
        ("thing: ball", "thing: bat"),
        ("day: 2026-01-02", "day: 2026-01-09"),
        ("expected: red", "expected: blue"),
        ("{kind: primary,", "{kind: secondary,"),
        ("human_label: pass", "human_label: fail"),
        ('run: "true"', 'run: "false"'),
        ("files: {photo: photo.png}", "files: {photo: other.png}"),
    ],
)
def test_every_field_of_a_case_changes_the_dataset_hash_and_not_the_config_hash(
    tmp_path: Path, old: str, new: str
) -> None:
    assert old in HASHED_CONFIG
    (tmp_path / "other.png").write_bytes(PHOTO + b"y")
    config_hash, dataset_hash = hashes(tmp_path, HASHED_CONFIG.replace(old, new))
    assert dataset_hash != DATASET_HASH
    assert config_hash == CONFIG_HASH


def test_the_content_of_an_attached_file_changes_the_dataset_hash(tmp_path: Path) -> None:
    config_hash, dataset_hash = hashes(tmp_path, photo=PHOTO + b"y")
    assert (config_hash, dataset_hash != DATASET_HASH) == (CONFIG_HASH, True)


@pytest.mark.parametrize(
    ("old", "new", "config_changes"),
    [
        ("Colour of", "Color of", True),  # what the run asks
        ('default: "red"', 'default: "blue"', True),  # the model's settings
        ("type: contains}", "type: contains, weight: 2}", True),  # how it is scored
        ("name: pinned\n", "name: pinned\ndescription: what it is\n", False),
        ("name: pinned\n", "name: pinned\nthresholds: {min_pass_rate: 0.5}\n", False),
        ("name: pinned\n", "name: pinned\nsettings: {concurrency: 3}\n", False),
    ],
)
def test_what_the_config_asks_and_scores_changes_only_the_config_hash(
    tmp_path: Path, old: str, new: str, config_changes: bool
) -> None:
    assert old in HASHED_CONFIG
    config_hash, dataset_hash = hashes(tmp_path, HASHED_CONFIG.replace(old, new))
    assert (config_hash != CONFIG_HASH) is config_changes
    assert dataset_hash == DATASET_HASH


EMBEDDED = """\
models:
  - {id: m, provider: mock}
  - {id: embed, provider: %s, model: %s, base_url: 'http://127.0.0.1:9/v1'}
variants:
  - {id: v, messages: [{role: user, content: "{{ q }}"}]}
cases:
  - {id: c1, vars: {q: hi}, expected: hello}
scorecard:
  - {name: meaning, type: semantic, embedder: {model: %s}}
"""


def test_the_model_an_embedder_names_leaves_the_matrix(tmp_path: Path) -> None:
    config = read_config(tmp_path, EMBEDDED % ("openai", "text-embedding-3-small", "embed"))
    assert [m.id for m in config.models] == ["m"]
    assert [(m.id, m.model, m.where) for m in config.embedders] == [
        ("embed", "text-embedding-3-small", "models[1]")
    ]


def test_an_embedder_naming_no_model_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    err = config_error(tmp_path, EMBEDDED % ("openai", "text-embedding-3-small", "emb"))
    assert err.message == "criterion 'meaning': the embedder names no model 'emb'"
    assert (err.where, err.line) == ("scorecard[0].embedder.model", 9)
    assert err.fix is not None and err.fix.endswith("(models: m, embed)")


def test_an_embedder_that_is_the_only_model_leaves_none_to_answer(tmp_path: Path) -> None:
    text = (EMBEDDED % ("openai", "text-embedding-3-small", "embed")).replace(
        "  - {id: m, provider: mock}\n", ""
    )
    err = config_error(tmp_path, text)
    assert err.message.startswith("every model of `models:` is an embedder")
    assert err.where == "models"


def test_an_embedder_of_a_provider_without_embeddings_is_refused(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", EMBEDDED % ("anthropic", "claude-haiku-4-5", "embed"))
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    err = info.value
    assert err.message == "model 'embed' (provider anthropic) has no embeddings endpoint"
    assert err.where == "models[1].provider"
    assert err.fix is not None and "openai, openai-compatible, google" in err.fix


def test_an_embedder_mapping_takes_only_model(tmp_path: Path) -> None:
    text = (EMBEDDED % ("openai", "text-embedding-3-small", "embed")).replace(
        "embedder: {model: embed}", "embedder: {model: embed, batch: 8}"
    )
    err = config_error(tmp_path, text)
    assert "batch" in err.message
    assert err.where.startswith("scorecard[0].embedder")


def test_an_embedding_model_is_priced_from_the_shipped_table(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", EMBEDDED % ("openai", "text-embedding-3-large", "embed"))
    from evalwh.engine.execute import check_config

    _, checked = check_config(load_config(cfg))
    (model,) = checked.embedders
    assert model.price == Price(0.13, 0.0)
