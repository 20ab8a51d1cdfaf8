"""Eval configs and case files the benchmarks run (written into a scratch folder)."""

from __future__ import annotations

import json
from pathlib import Path

TOPICS = ("geography", "math", "history", "science", "art")

# Three deterministic scorers: exact (case.expected), contains (case.expected) and a regex.
SCORECARD = """\
scorecard:
  - name: exact
    type: exact
  - name: mentions
    type: contains
    required: false
  - name: digits
    type: regex
    pattern: '^\\d+$'
    required: false
"""


def write_cases(path: Path, n: int) -> Path:
    """``n`` arithmetic questions as JSONL: id, question, expected, topic, difficulty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            row = {
                "id": f"case-{i:06d}",
                "question": f"What is {i} plus {i}?",
                "expected": str(2 * i),
                "topic": TOPICS[i % len(TOPICS)],
                "difficulty": "hard" if i % 3 == 0 else "easy",
            }
            fh.write(json.dumps(row) + "\n")
    return path


def write_config(
    folder: Path,
    n: int,
    *,
    concurrency: int = 16,
    base_url: str | None = None,
    cases_file: Path | None = None,
    mock_latency_ms: float = 0,
    model_extra: dict[str, object] | None = None,
) -> Path:
    """An eval of ``n`` cases x 1 model x 1 variant with three deterministic scorers.

    Without ``base_url`` the model is the mock provider, answering the expected answer after
    ``mock_latency_ms`` (default 0); with it, an ``openai-compatible`` model at that URL (max_concurrency =
    ``concurrency``, so the HTTP pool never caps the run below it).
    """
    folder.mkdir(parents=True, exist_ok=True)
    cases = cases_file or write_cases(folder / "cases.jsonl", n)
    if base_url is None:
        model = f"""\
  - id: mock
    provider: mock
    mock:
      latency_ms: {mock_latency_ms:g}
"""
    else:
        keys = {"max_retries": 0, **(model_extra or {})}
        model = f"""\
  - id: local
    provider: openai-compatible
    model: bench
    price: {{input_per_mtok: 0, output_per_mtok: 0}}
    max_concurrency: {concurrency}
    timeout_s: 300
    base_url: {base_url}
""" + "".join(f"    {k}: {json.dumps(v)}\n" for k, v in keys.items())
    text = f"""\
name: bench
settings:
  output_dir: .evalwh
  concurrency: {concurrency}
models:
{model}variants:
  - id: plain
    messages:
      - role: system
        content: Answer with the number only.
      - role: user
        content: "{{{{ question }}}}"
cases:
  - file: {cases.resolve().as_posix()}
    metadata: [topic, difficulty]
{SCORECARD}"""
    path = folder / "eval.yaml"
    path.write_text(text, encoding="utf-8")
    return path


class SyntheticSource:
    """A datasource of ``n`` generated cases (the rows of :func:`write_cases`), in pages of
    ``page_size``: nothing is held but the page being handed out."""

    def __init__(self, params: dict, root: Path) -> None:
        self.n = int(params["n"])
        self.page_size = int(params.get("page_size", 1000))

    def pages(self, cursor: int | None) -> tuple[list[dict], int | None]:
        start = cursor or 0
        stop = min(start + self.page_size, self.n)
        rows = [
            {
                "id": f"case-{i:07d}",
                "question": f"What is {i} plus {i}?",
                "expected": str(2 * i),
                "topic": TOPICS[i % len(TOPICS)],
                "difficulty": "hard" if i % 3 == 0 else "easy",
            }
            for i in range(start, stop)
        ]
        return rows, (stop if stop < self.n else None)


def write_datasource_config(folder: Path, n: int, *, page_size: int = 1000) -> Path:
    """The memory workload's eval (mock model, three scorers), its cases from
    :class:`SyntheticSource` instead of a file."""
    path = write_config(folder, 1, cases_file=folder / "unused.jsonl")
    text = path.read_text(encoding="utf-8")
    head, _, tail = text.partition("cases:\n")
    _, _, scorecard = tail.partition("scorecard:\n")
    path.write_text(
        f"{head}cases:\n  - source: workloads:SyntheticSource\n"
        f"    params: {{n: {n}, page_size: {page_size}}}\n"
        f"    metadata: [topic, difficulty]\nscorecard:\n{scorecard}",
        encoding="utf-8",
    )
    return path


def write_report_config(folder: Path, n: int) -> Path:
    """``n`` cases x 2 models on the mock provider for the HTML report figures: one model
    answers right, the other gives a long wrong answer (2,000 characters) to a fifth of the
    cases, so the page carries failures, long outputs and two cells side by side."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = write_cases(folder / "cases.jsonl", n)
    long_wrong = "wrong " * 333
    text = f"""\
name: report-bench
settings:
  output_dir: .evalwh
  concurrency: 16
models:
  - id: good
    provider: mock
  - id: sloppy
    provider: mock
    mock:
      rules:
        - rate: 0.2
          reply: "{long_wrong.strip()}"
variants:
  - id: plain
    messages:
      - role: user
        content: "{{{{ question }}}}"
cases:
  - file: {cases.resolve().as_posix()}
    metadata: [topic, difficulty]
{SCORECARD}"""
    path = folder / "eval.yaml"
    path.write_text(text, encoding="utf-8")
    return path
