"""The ``python`` scorer: a user function ``fn(output, case[, **options]) -> result``.

``function`` is ``module:function`` (imported with the config's folder on ``sys.path``) or
``path/to/file.py:function`` (relative to the config's folder, loaded under a unique module
name). The result may be a bool (1/0), a number in [0, 1], a dict with ``score`` and optional
``passed``/``details``/``rationale`` (other keys are kept in details), or a ScoreResult.

The function runs in a worker process (evalwh.scoring.pyworker) with a per-call ``timeout_s``
(default 30 s) and a memory bound ``memory_mb`` (default 2048, evalwh.config.childmemory): a
call that hangs, exits or runs out of memory is a scorer error on that case, not a dead run.
The worker gets a minimal environment (what any child gets, plus what Python itself reads,
such as ``PYTHONPATH`` and ``VIRTUAL_ENV``) and the variables the criterion names in
``pass_env`` — not evalwh's whole environment, where API keys live.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.config.childmemory import memory_mb_of
from evalwh.config.model import Criterion
from evalwh.config.secrets import pass_env_names
from evalwh.scoring.base import ScorerFn, option_error


def python_scorer(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """The criterion's function, run in a :class:`~evalwh.scoring.pyworker.ScorerWorker`
    bounded by ``timeout_s`` (default 30 s) per call and by ``memory_mb`` (default 2048), seeing only the ``pass_env`` variables
    beyond a minimal environment."""
    from evalwh.scoring.pyworker import DEFAULT_TIMEOUT_S, ScorerWorker

    options = criterion.options.get("options")
    if options is not None and not isinstance(options, dict):
        raise option_error(
            criterion,
            file,
            "options",
            f"'options' must be a mapping, got {options!r}",
            "write `options:` followed by keyword arguments for the function",
        )
    timeout = criterion.options.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise option_error(
            criterion,
            file,
            "timeout_s",
            f"'timeout_s' must be a positive number of seconds, got {timeout!r}",
            "write e.g. `timeout_s: 30`",
        )
    memory_mb = memory_mb_of(criterion.options.get("memory_mb"))
    if memory_mb is None:
        raise option_error(
            criterion,
            file,
            "memory_mb",
            f"'memory_mb' must be a whole number of MiB above 0, got "
            f"{criterion.options.get('memory_mb')!r}",
            "write e.g. `memory_mb: 4096` (the default is 2048)",
        )
    given = criterion.options.get("pass_env")
    pass_env = pass_env_names(given)
    if pass_env is None:
        raise option_error(
            criterion,
            file,
            "pass_env",
            f"'pass_env' must be a list of environment variable names, got {given!r}",
            "write e.g. `pass_env: [HF_TOKEN]` (the variables the function reads)",
        )
    return ScorerWorker(
        criterion,
        Path(root).resolve(),
        file,
        timeout_s=float(timeout),
        pass_env=pass_env,
        memory_mb=memory_mb,
    )
