"""`evalwh init`: a small eval that runs at once on the mock provider, ready to edit."""

from __future__ import annotations

from pathlib import Path

from evalwh.errors import UsageError

EVAL_YAML = """\
# An eval: prompt variants x models x cases, a scorecard and thresholds.
# Run it:        evalwh run
# Docs:          docs/configuration.md in the evalwh repository
name: my-eval

models:
  # The mock provider answers from a script: no key, no network. Swap in a real model later,
  # e.g.  - {id: claude, provider: anthropic, model: claude-sonnet-4-5}
  - id: mock
    provider: mock
    mock:
      latency_ms: [5, 20]
      rules:
        - when: {variant: friendly}
          reply: "Sure! The answer is {{ expected }}."

variants:
  - id: plain
    messages:
      - role: system
        content: Answer with the answer only.
      - role: user
        content: "{{ question }}"
  - id: friendly
    prompt: prompts/friendly.yaml

cases:
  - file: cases.jsonl

scorecard:
  - name: exact
    type: exact
    case_sensitive: false
    weight: 2
  - name: mentions
    type: contains
    required: false

thresholds:
  min_pass_rate: 0.5
"""

PROMPT_YAML = """\
messages:
  - role: system
    content: You are a friendly assistant.
  - role: user
    content: "{{ question }}"
"""

CASES_JSONL = """\
{"id": "sky", "vars": {"question": "What colour is a clear daytime sky?"}, "expected": "blue", "metadata": {"topic": "nature"}}
{"id": "sum", "vars": {"question": "What is 2 + 2?"}, "expected": "4", "metadata": {"topic": "math"}}
{"id": "week", "vars": {"question": "How many days are in a week?"}, "expected": "7", "metadata": {"topic": "math"}}
"""

FILES = {
    "eval.yaml": EVAL_YAML,
    "prompts/friendly.yaml": PROMPT_YAML,
    "cases.jsonl": CASES_JSONL,
}


IGNORED = (".evalwh/", ".evalwh.secrets.yaml")


def _ignore_outputs(folder: Path) -> Path | None:
    """Make sure the warehouse and the secrets file stay out of version control."""
    path = folder / ".gitignore"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    missing = [entry for entry in IGNORED if entry not in lines]
    if not missing:
        return None
    with path.open("a", encoding="utf-8") as fh:
        if lines and lines[-1].strip():
            fh.write("\n")
        fh.write("# evalwh: results and secrets\n" + "".join(f"{entry}\n" for entry in missing))
    return path


def write_scaffold(folder: Path, *, force: bool = False) -> list[Path]:
    targets = [folder / name for name in FILES]
    existing = [p for p in targets if p.exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise UsageError(f"refusing to overwrite {names} (pass --force to replace them)")
    for path, text in zip(targets, FILES.values(), strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    ignore = _ignore_outputs(folder)
    return targets + ([ignore] if ignore else [])
