"""Third-party providers and scorers, installed as pip installs them (the package folder and a
``.dist-info`` holding its entry points, on sys.path) and found through their entry points
(docs/providers.md "Adding a provider", docs/scoring.md). A plugin that does not load is a
config error that names it and the fix, not a traceback; an unknown name lists what is
installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import evalwh
from evalwh import providers
from evalwh.errors import ConfigError
from evalwh.providers import provider_class
from evalwh.scoring import base
from tests.conftest import installed_package, write

PLUGIN = '''\
from evalwh.providers.base import Completion
from evalwh.scoring.base import ScoreResult


class Echo:
    """Answers with the prompt's text in capitals; one token per word."""

    def __init__(self, spec):
        self.spec = spec

    async def complete(self, request):
        text = " ".join(
            p["text"] for m in request.messages for p in m["content"] if p["type"] == "text"
        )
        words = len(text.split())
        return Completion(text.upper(), input_tokens=words, output_tokens=words)

    async def aclose(self):
        pass


def shouty(criterion, root, file):
    def score(output, case):
        return ScoreResult(score=1.0 if output.isupper() else 0.0)

    return score
'''
ENTRY_POINTS = """\
[evalwh.providers]
echo = acme_plugins:Echo
ghost = acme_plugins_missing:Ghost

[evalwh.scorers]
shouty = acme_plugins:shouty
ghost-scorer = acme_plugins:no_such_factory
"""
CONFIG = """\
models:
  - {id: e, provider: PROVIDER, model: any}
variants:
  - {id: v, messages: [{role: user, content: "say {{ word }}"}]}
cases:
  - {id: c1, vars: {word: hello}, expected: SAY HELLO}
  - {id: c2, vars: {word: bye}, expected: say bye}
scorecard:
  - {name: loud, type: SCORER}
  - {name: same, type: exact}
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site-packages"
    write(site / "acme_plugins" / "__init__.py", PLUGIN)
    with installed_package(site, "acme_plugins", ENTRY_POINTS, monkeypatch):
        yield tmp_path


def config(folder: Path, provider: str = "echo", scorer: str = "shouty") -> Path:
    text = CONFIG.replace("PROVIDER", provider).replace("SCORER", scorer)
    return write(folder / "eval.yaml", text)


def test_a_provider_and_a_scorer_from_entry_points_run_an_eval(installed: Path) -> None:
    assert providers.available()["echo"] == "acme_plugins:Echo"
    assert base.available()["shouty"] == "acme_plugins:shouty"
    evalwh.run_eval(config(installed), output_dir=installed / "out")
    view = evalwh.open_warehouse(installed / "out" / "warehouse.duckdb")
    answers = view.sql("SELECT case_id, output, input_tokens FROM cases ORDER BY case_id")
    assert answers.to_pylist() == [
        {"case_id": "c1", "output": "SAY HELLO", "input_tokens": 2},
        {"case_id": "c2", "output": "SAY BYE", "input_tokens": 2},
    ]
    scores = view.sql(
        "SELECT case_id, criterion, score FROM scores ORDER BY case_id, criterion"
    ).to_pylist()
    assert [(r["case_id"], r["criterion"], r["score"]) for r in scores] == [
        ("c1", "loud", 1.0),
        ("c1", "same", 1.0),
        ("c2", "loud", 1.0),
        ("c2", "same", 0.0),
    ]


@pytest.mark.parametrize(
    ("changed", "message", "where", "fix"),
    [
        (
            {"provider": "ghost"},
            "cannot load provider 'ghost' from acme_plugins_missing:Ghost: ModuleNotFoundError: "
            "No module named 'acme_plugins_missing'",
            "models[0].provider",
            "reinstall the package that registers this provider (entry point group "
            "'evalwh.providers')",
        ),
        (
            {"scorer": "ghost-scorer"},
            "criterion 'loud' (ghost-scorer): cannot load scorer 'ghost-scorer' from "
            "acme_plugins:no_such_factory: AttributeError: module 'acme_plugins' has no "
            "attribute 'no_such_factory'",
            "scorecard[0].type",
            "reinstall the package that registers this scorer (entry point group 'evalwh.scorers')",
        ),
    ],
    ids=["provider", "scorer"],
)
def test_a_plugin_that_does_not_load_is_a_config_error_naming_it(
    installed: Path, changed: dict[str, str], message: str, where: str, fix: str
) -> None:
    path = config(installed, **changed)
    with pytest.raises(ConfigError) as caught:
        evalwh.validate(path, output_dir=installed / "out")
    error = caught.value
    assert (error.message, error.file, error.where, error.fix) == (
        message,
        str(path.resolve()),
        where,
        fix,
    )


def test_an_unknown_provider_lists_the_installed_ones_with_the_plugins(installed: Path) -> None:
    path = config(installed, provider="ech")
    with pytest.raises(ConfigError) as caught:
        evalwh.validate(path, output_dir=installed / "out")
    assert caught.value.message == "unknown provider 'ech'"
    assert caught.value.where == "models[0].provider"
    assert caught.value.fix == (
        "use one of: anthropic, command, echo, ghost, google, mock, openai, openai-compatible"
    )


def test_an_unknown_scorer_suggests_the_closest_installed_one(installed: Path) -> None:
    path = config(installed, scorer="shoutty")
    with pytest.raises(ConfigError) as caught:
        evalwh.validate(path, output_dir=installed / "out")
    error = caught.value
    assert error.message == "criterion 'loud' (shoutty): unknown scorer type 'shoutty'"
    assert (error.file, error.where) == (str(path.resolve()), "scorecard[0].type")
    assert error.fix == (
        "did you mean 'shouty'? use one of: args-valid, bleu, contains, exact, ghost-scorer, "
        "json-schema, json-valid, llm-judge, max-tool-calls, not-contains, python, regex, "
        "rouge-l, semantic, shouty, tool-called, tool-not-called, tool-order, or install the "
        "package that provides it"
    )
    # nothing close: no suggestion
    with pytest.raises(ConfigError) as caught:
        evalwh.validate(config(installed, scorer="zzzzzz"), output_dir=installed / "out")
    assert caught.value.fix.startswith("use one of: args-valid, bleu, ")


def test_provider_class_names_the_place_only_when_given_one() -> None:
    with pytest.raises(ConfigError) as caught:
        provider_class("nosuch")
    assert (caught.value.file, caught.value.where) == (None, None)
    with pytest.raises(ConfigError) as caught:
        provider_class("nosuch", where="models[2]", file="eval.yaml")
    assert (caught.value.file, caught.value.where) == ("eval.yaml", "models[2].provider")
    assert provider_class("mock").__name__ == "MockProvider"
