"""Runs for the HTML report tests: the pairwise example, one with planted hostile text, and
a later run of it that regresses; the tools example with hostile text in its transcripts. All
on the mock provider, in a folder of their own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT

PAIRWISE = ROOT / "examples" / "pairwise"
TOOLS = ROOT / "examples" / "tools"
SCRIPT = "<script>window.pwned=1</script>"
IMG = '<img src=x onerror="window.pwned=2">'
BREAKOUT = "</script><script>window.pwned=3</script><!--"
RATIONALE = "<img src=x onerror=window.pwned=4><script>window.pwned=5</script>"
# a tool's result and error that try to close the transcript's <details> and run script
TOOL_RESULT = "clear</details>" + SCRIPT + IMG
TOOL_ERROR = "unknown city</details></li><img src=x onerror=window.pwned=6>"


def pairwise_copy(folder: Path, *, hostile: bool = False) -> Path:
    """A private copy of examples/pairwise; ``hostile`` plants script-bearing text in a
    case's question, metadata and the answer the small model gives (case q03), and in every
    rationale the judges give."""
    target = folder / "pairwise"
    shutil.copytree(PAIRWISE, target, ignore=shutil.ignore_patterns(".evalwh", "*.html"))
    if hostile:
        cases = target / "cases.jsonl"
        rows = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines()]
        for row in rows:
            if row["id"] == "q03":
                row["vars"]["distractor"] = "Sydney " + SCRIPT + IMG
                row["vars"]["question"] += " " + IMG
                row["metadata"]["note"] = BREAKOUT
        cases.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        config = target / "eval.yaml"
        text = config.read_text(encoding="utf-8")
        for said in ("compared with the reference", "checked against the reference"):
            text = text.replace(said, RATIONALE)
        config.write_text(text, encoding="utf-8")
    return target / "eval.yaml"


def regressed(config: Path) -> Path:
    """The same eval where the large model fails every hard case, with a regression gate."""
    data: dict[str, Any] = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["models"][1]["mock"]["rules"][0]["rate"] = 1.0
    data["thresholds"] = {"regression": {"max_drop_pass_rate": 0.05}}
    out = config.with_name("regressed.yaml")
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return out


def tools_copy(folder: Path, *, hostile: bool = False) -> Path:
    """A private copy of examples/tools; ``hostile`` makes the weather tool's Rome result
    (its ``sky``; case warmer) :data:`TOOL_RESULT` and its error for an unknown city (case
    looping) :data:`TOOL_ERROR`. Case paris's transcript stays plain (the docs show it)."""
    target = folder / "tools"
    shutil.copytree(TOOLS, target, ignore=shutil.ignore_patterns(".evalwh", "*.html"))
    config = target / "eval.yaml"
    if hostile:
        data: dict[str, Any] = yaml.safe_load(config.read_text(encoding="utf-8"))
        rules = data["tools"][0]["mock"]
        rules[1]["result"]["sky"] = TOOL_RESULT
        rules[-1]["error"] = TOOL_ERROR
        config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return config


# a tool name a model made up, planted in a changed run's transcript: the compare pages show it
TOOL_NAME = "<script>window.pwned=7</script>get_weather"


def changed_tool_run(
    warehouse: Path, run_id: str, label: str = "changed", cases: tuple[str, ...] = ()
) -> str:
    """A copy of run ``run_id`` of the tools example (hostile or not) in the warehouse file
    ``warehouse`` as a new run, labelled ``label`` and started a second later, whose case
    warmer called :data:`TOOL_NAME` (unknown to the loop: failed, its arguments off any
    schema) where it called get_weather the second time; only the ``cases`` named (all when
    empty). Returns the new run's id."""
    import duckdb

    new_id = run_id[:-4] + "c4a9"
    con = duckdb.connect(str(warehouse))
    try:
        for table in ("runs", "cases", "scores", "turns"):
            kept = "" if table == "runs" or not cases else " AND list_contains(?, case_id)"
            con.execute(
                f"INSERT INTO {table} BY NAME SELECT * REPLACE (? AS run_id) FROM {table} "
                f"WHERE run_id = ?{kept}",
                [new_id, run_id] + ([list(cases)] if kept else []),
            )
        con.execute(
            "UPDATE runs SET label = ?, started_at = started_at + INTERVAL 1 SECOND "
            "WHERE run_id = ?",
            [label, new_id],
        )
        con.execute(
            "UPDATE turns SET tool_name = ?, result = NULL, args_valid = false, error = ? "
            "WHERE run_id = ? AND case_id = 'warmer' AND seq = (SELECT max(seq) FROM turns "
            "WHERE run_id = ? AND case_id = 'warmer' AND role = 'tool')",
            [TOOL_NAME, f"unknown tool '{TOOL_NAME}' (offered: get_weather)", new_id, new_id],
        )
    finally:
        con.close()
    return new_id
