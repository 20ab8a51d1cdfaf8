"""One small run through the public API, read back from its warehouse: what a cell's row
holds (the answer, its latency, tokens and cost) and the output mode a json-schema score
records. A cheap whole run, so that these columns are checked within the mutation run's budget
(docs/testing.md); the wider runs are in test_engine.py and test_structured.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

import evalwh

SCHEMA = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}
CONFIG = f"""\
name: cells
models:
  - id: m
    provider: mock
    price: {{input_per_mtok: 1000000, output_per_mtok: 2000000}}
    mock: {{default: '{{"city": "Paris"}}'}}
variants:
  - id: v
    messages: [{{role: user, content: "Where is {{{{ q }}}}?"}}]
    output_schema: {{schema: {json.dumps(SCHEMA)}, name: place}}
cases:
  - {{id: c1, vars: {{q: the Louvre}}}}
scorecard:
  - {{name: shape, type: json-schema, schema: {json.dumps(SCHEMA)}}}
"""


def test_a_cells_row_holds_the_answer_its_latency_tokens_and_cost(tmp_path: Path) -> None:
    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    con = duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True)
    try:
        output, latency, tokens_in, tokens_out, cost, error = (
            con.execute(
                "SELECT output, latency_ms, input_tokens, output_tokens, cost_usd, error FROM cases"
            ).fetchone()
            or (None,) * 6
        )
        mode = con.execute("SELECT details ->> 'mode' FROM scores").fetchone()
    finally:
        con.close()
    assert (output, error) == ('{"city": "Paris"}', None)
    assert latency is not None and latency >= 0
    assert tokens_in > 0 and tokens_out > 0
    assert cost == tokens_in * 1.0 + tokens_out * 2.0  # $1 and $2 per token
    assert mode == ("native",)  # the mock takes a schema natively
