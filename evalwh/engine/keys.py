"""API keys checked before a run: every model, judge and embedding model the run will call
has its key.

A request looks its key up when it is sent (evalwh.config.secrets.get_secret: the
environment, then the secrets files), so without this check a config whose key is set nowhere
passes validation and then fails every request of that model as an ``auth`` error. Before
anything is called, ``evalwh validate``, ``run`` (``--dry-run`` too) and MCP ``run_eval``
raise one :class:`~evalwh.errors.MissingKeysError` (exit code 2) naming, for every such model,
the variable to set and where the model is in eval.yaml::

    eval.yaml: 2 models of this run need an API key that is not set (...):
      eval.yaml:4:5 models[0]: claude (anthropic) needs ANTHROPIC_API_KEY
      eval.yaml:12:5 judges[0].model: grader (openai) needs OPENAI_API_KEY

Only what the run will call counts: a model all of whose planned cells are answered from the
response cache needs no key, nor does a judge no criterion or comparison uses (nor an
embedding model when every cell is cached). What a provider
looks up comes from its ``secrets_needed`` (evalwh.providers.secrets_needed): the mock, the
command provider, ``--fake`` (every model on the mock) and ``openai-compatible`` without
``api_key_env`` need none.
"""

from __future__ import annotations

from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.config.secrets import PROJECT_SECRETS_FILE, SECRETS_ENV, get_secret
from evalwh.errors import MissingKeysError

FIX = (
    "set {each} in the environment (`export {name}=...`) or in a secrets file (`{name}: ...` "
    "in {project}, in the file ${env} names, or in secrets.yaml in the user config folder; "
    "docs/secrets.md); or run every model on the mock with --fake, which needs no key"
)


def called_models(prepared: Any, cache: dict[str, Any]) -> list[ModelSpec]:
    """The models (and judges' models) the run will send at least one request to."""
    from evalwh.engine.execute import judge_calls

    plan = prepared.plan
    if plan.streaming:  # cases still to come from a datasource: every model may be called
        used = {c.options.get("judge") for c in prepared.config.scorecard if c.type == "llm-judge"}
        used |= {c.judge for c in prepared.config.pairwise}
        judges = [j for j in prepared.config.judges if j.id in used]
        return [*plan.models, *(j.model for j in judges), *prepared.config.embedders]
    called = {i for h, i in zip(prepared.hashes, prepared.models, strict=True) if h not in cache}
    calls = judge_calls(prepared, cache)
    return [
        *(m for i, m in enumerate(plan.models) if i in called),
        *(j.model for j in prepared.config.judges if calls.get(j.id, [0])[0] > 0),
        *(prepared.config.embedders if called else ()),
    ]


def missing_keys(prepared: Any, cache: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per called model whose key (or a ``${NAME}`` header) is set nowhere."""
    from evalwh import providers
    from evalwh.config.yamlpos import locate, parse_path

    config = prepared.config
    missing = []
    for model in called_models(prepared, cache):
        for need in providers.secrets_needed(model):
            if any(get_secret(name) for name in need.names):
                continue
            in_yaml = not need.where.startswith("--")  # `--model provider/model` has no line
            line, column = locate(config.node, parse_path(need.where)) if in_yaml else (None, None)
            missing.append(
                {
                    "model": model.id,
                    "provider": model.provider,
                    "names": list(need.names),
                    "where": need.where,
                    "line": line,
                    "column": column,
                }
            )
    return missing


def check_keys(prepared: Any, cache: dict[str, Any]) -> None:
    """Raise MissingKeysError (exit code 2) when a model the run will call has no key."""
    missing = missing_keys(prepared, cache)
    if not missing:
        return
    name = missing[0]["names"][0]
    several = len({tuple(m["names"]) for m in missing}) > 1
    raise MissingKeysError(
        missing,
        file=str(prepared.config.path),
        fix=FIX.format(
            each="each one" if several else "it",
            name=name,
            project=PROJECT_SECRETS_FILE,
            env=SECRETS_ENV,
        ),
    )
