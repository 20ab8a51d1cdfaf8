"""What to do next about a run that did not complete: the command that continues or repairs
it, and for a failed run first the cause its stored errors name (a refused or missing API key,
an endpoint nothing answers at). Used by `evalwh show`, a run's own result (``RunResult.next``)
and MCP's run summaries."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any


def _listed(value: Any) -> bool:
    """A run's ``datasources`` column (JSON text, or already decoded) names at least one."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return False
    return bool(value)


def next_step(run: dict[str, Any], errors: Sequence[dict[str, Any]] = ()) -> str | None:
    """What to run for a run that did not complete (`evalwh show`, and a run's own result):
    for a failed run, first what its stored ``errors`` (the ``errors`` query's rows) say went
    wrong (:func:`failure_causes`)."""
    config, run_id = run.get("config_path") or "CONFIG", run["run_id"]
    status = run["status"]
    causes = failure_causes(errors) if status == "failed" else []
    why = "".join(f"{cause}; " for cause in causes)
    if status in ("interrupted", "failed") and _listed(run.get("datasources")):
        from evalwh.engine.feed import restart_hint

        return f"{status}: {why}the stored rows are kept; {restart_hint(config)}"
    if status == "interrupted":
        return (
            f"interrupted: the stored rows are kept, but the run (and its Parquet export) is "
            f"unfinished; continue and repair it with `evalwh run {config} --resume {run_id}`"
        )
    if status == "failed":
        retry = f"re-run the errored cells with `evalwh run {config} --retry-errors {run_id}`"
        if causes:
            return f"failed: {why}then {retry}"
        # requests errored for no cause the errors name (5xx, 429, timeouts): an outage
        return f"failed: once the endpoint is back, {retry}" if errors else f"failed: {retry}"
    if status in ("running", "exporting"):
        return (
            f"{status}: held by pid {run.get('pid')} on {run.get('host')}; a run whose "
            "owner is gone can be taken over with `--resume RUN --force`"
        )
    return None


def failure_causes(errors: Sequence[dict[str, Any]]) -> list[str]:
    """What a run's stored errors say went wrong, most frequent first, each said once: an API
    key refused (HTTP 401/403) or not set names its variable; a connection that could not be
    made names the URL. Errors of any other kind name no cause."""
    from evalwh.providers.base import KEY_NAMED, NO_CONNECTION

    causes: list[str] = []
    for row in sorted(errors, key=lambda r: -int(r.get("n") or 0)):
        text, kind = str(row.get("error") or ""), row.get("error_kind")
        cause = None
        if kind == "auth":
            named = KEY_NAMED.search(text)
            status = re.search(r"\bHTTP (40[13])\b", text)
            if named and named.group(1):
                cause = (
                    f"the API key in {named.group(1)} was refused (HTTP "
                    f"{status.group(1) if status else '401/403'}): check its value"
                )
            elif named:
                cause = (
                    f"{named.group(2)} is not set: set it in the environment or a secrets "
                    "file (docs/secrets.md)"
                )
            else:
                cause = (
                    f"the endpoint refused the request (HTTP "
                    f"{status.group(1) if status else '401/403'}): it needs an API key, named "
                    "with the model's api_key_env"
                )
        elif kind in ("connection", "unreachable"):
            url = NO_CONNECTION.search(text)
            if url:
                cause = (
                    f"nothing answered at {url.group(1)}: start the server there or correct "
                    "the model's base_url"
                )
        if cause is not None and cause not in causes:
            causes.append(cause)
    return causes
