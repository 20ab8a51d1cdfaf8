"""The "Writing a scorer" guide of docs/scoring.md runs as written.

The page's ``file=`` blocks are written to a folder; the python scorer's eval runs and its
scores are the ones the page states. The scorer-type package is "installed" the way pip
leaves it (the package folder and a ``.dist-info`` holding its entry points, on sys.path), so
evalwh finds ``max-words`` through the ``evalwh.scorers`` entry point group like any plug-in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import evalwh
from evalwh.errors import ConfigError
from evalwh.scoring import base
from tests.conftest import ROOT, installed_package

PAGE = ROOT / "docs" / "scoring.md"
FENCE = re.compile(r"^```([\w+-]*)([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)


def guide() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("\n## Writing a scorer\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def guide_blocks() -> list[tuple[str, dict[str, str], str]]:
    return [
        (lang, dict(re.findall(r"(\w+)=(\S+)", info)), body)
        for lang, info, body in FENCE.findall(guide())
    ]


def configs() -> list[str]:
    return [body for lang, attrs, body in guide_blocks() if lang == "yaml" and "file" not in attrs]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The guide's files, written where the page says they live."""
    for _, attrs, body in guide_blocks():
        if "file" in attrs:
            target = tmp_path / attrs["file"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
    return tmp_path


def scores(result_dir: Path) -> dict[str, dict]:
    view = evalwh.open_warehouse(result_dir / "warehouse.duckdb")
    rows = view.sql("SELECT case_id, score, passed, details FROM scores").to_pylist()
    return {r["case_id"]: r for r in rows}


def test_python_scorer_example_scores_as_the_page_says(folder: Path) -> None:
    python_config = next(c for c in configs() if "type: python" in c)
    config = folder / "eval.yaml"
    config.write_text(python_config, encoding="utf-8")
    result = evalwh.run_eval(config, output_dir=folder / "out")
    got = scores(folder / "out")
    assert got["shipping"]["score"] == 1.0 and got["shipping"]["passed"]
    assert got["refund"]["score"] == 0.5 and not got["refund"]["passed"]
    assert '{"missing": ["5 days"]}' in guide()
    assert json.loads(got["refund"]["details"]) == {"missing": ["5 days"]}
    assert result.totals["n_passed"] == 1


def test_python_scorer_that_raises_fails_only_its_criterion(folder: Path) -> None:
    """The page: a case without must_mention raises KeyError; the run goes on."""
    python_config = next(c for c in configs() if "type: python" in c)
    config = folder / "eval.yaml"
    config.write_text(python_config.replace(", must_mention: [Monday, courier]", ""))
    evalwh.run_eval(config, output_dir=folder / "out")
    view = evalwh.open_warehouse(folder / "out" / "warehouse.duckdb")
    rows = {
        r["case_id"]: r for r in view.sql("SELECT case_id, score, error FROM scores").to_pylist()
    }
    assert rows["shipping"]["score"] == 0.0 and "KeyError" in rows["shipping"]["error"]
    assert rows["refund"]["error"] is None


@pytest.fixture
def installed(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install the page's package as pip would: its folder plus a .dist-info with the entry
    points of its pyproject.toml."""
    toml = (folder / "pyproject.toml").read_text(encoding="utf-8")
    table = re.search(
        r'^\[project\.entry-points\."evalwh\.scorers"\]\n(.*?)(?=^\[|\Z)', toml, re.M | re.S
    )
    assert table, "the page's pyproject.toml registers no evalwh.scorers entry point"
    name = re.search(r'^name = "([^"]+)"', toml, re.M).group(1)
    site = folder / "site-packages"
    site.mkdir()
    (folder / "evalwh_maxwords").rename(site / "evalwh_maxwords")
    entries = "".join(
        f"{k.strip()} = {v.strip().strip(chr(34))}\n"
        for k, v in (line.split("=", 1) for line in table.group(1).splitlines() if "=" in line)
    )
    with installed_package(
        site, name.replace("-", "_"), f"[evalwh.scorers]\n{entries}", monkeypatch
    ):
        yield folder


def test_scorer_type_is_found_through_its_entry_point_and_scores(installed: Path) -> None:
    assert base.available()["max-words"] == "evalwh_maxwords:max_words"
    plug_in_config = next(c for c in configs() if "type: max-words" in c)
    config = installed / "eval.yaml"
    config.write_text(plug_in_config, encoding="utf-8")
    evalwh.run_eval(config, output_dir=installed / "out")
    got = scores(installed / "out")["shipping"]
    assert got["score"] == pytest.approx(6 / 7) and not got["passed"]
    assert json.loads(got["details"]) == {"words": 7, "limit": 6}
    assert '{"words": 7, "limit": 6}' in guide()


def test_scorer_type_refuses_a_bad_option_as_the_page_shows(installed: Path) -> None:
    plug_in_config = next(c for c in configs() if "type: max-words" in c)
    config = installed / "eval.yaml"
    config.write_text(plug_in_config.replace("limit: 6", "limit: short"), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        evalwh.validate(config, output_dir=installed / "out")
    assert caught.value.exit_code == 2 and caught.value.where == "scorecard[0].limit"
    shown = next(body for lang, _, body in guide_blocks() if lang == "text")
    assert str(caught.value).replace(str(config), "eval.yaml") == shown.rstrip("\n")
    assert not (installed / "out").exists()


def semantic_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("\n## Semantic similarity\n")
    return text[start : text.index("\n## ", start + 1)]


def test_the_semantic_example_scores_the_cosines_its_table_states(
    tmp_path: Path, server: Any
) -> None:
    """The page's eval runs against a fake OpenAI-compatible embeddings endpoint that gives
    each text the vector of the page's table; each case gets the table's cosine, score and
    verdict."""
    from tests.fakes.servers import raw

    section = semantic_section()
    (config,) = [b for lang, _, b in FENCE.findall(section) if lang == "yaml"]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if re.match(r"\| (close|far|opposite) ", line)
    ]
    assert [r[0] for r in rows] == ["close", "far", "opposite"]
    vectors = {}
    for _, output, out_vec, reference, ref_vec, *_ in rows:
        vectors[output], vectors[reference] = json.loads(out_vec), json.loads(ref_vec)

    def embeddings(req: Any) -> Any:
        text = req.body["input"][0]
        data = [{"object": "embedding", "index": 0, "embedding": vectors[text]}]
        usage = {"prompt_tokens": 3, "total_tokens": 3}
        return raw(
            200, {"object": "list", "data": data, "model": req.body["model"], "usage": usage}
        )

    server.responder = embeddings
    assert "base_url: http://localhost:11434/v1" in config
    path = tmp_path / "docs-semantic.yaml"
    path.write_text(config.replace("http://localhost:11434/v1", server.openai_url), "utf-8")
    evalwh.run_eval(path, output_dir=tmp_path / "out")
    got = scores(tmp_path / "out")
    for case, *_, cosine, score, verdict in rows:
        assert json.loads(got[case]["details"])["cosine"] == pytest.approx(float(cosine))
        assert got[case]["score"] == pytest.approx(float(score))
        assert got[case]["passed"] is (verdict == "pass")
    assert {r.path for r in server.requests} == {"/v1/embeddings"}
