"""`evalwh cache` and ``--cache-dir``: the response cache kept apart from the warehouse, and
`cache clear` deleting one model's, older or all entries."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from tests.conftest import run_cli


def test_cache_dir_keeps_the_response_cache_apart_from_the_warehouse(
    quickstart: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "ci-cache"
    first = run_cli(
        "run", str(quickstart), "-q", "-o", str(tmp_path / "a"), "--cache-dir", str(shared)
    )
    assert first.returncode == 0, first.stderr
    assert (shared / "cache.duckdb").is_file()
    con = duckdb.connect(str(tmp_path / "a" / "warehouse.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM response_cache").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM cases").fetchone() == (48,)
    finally:
        con.close()
    # another job, another warehouse, the same cache folder (the environment variable): all hits
    second = run_cli(
        "run", str(quickstart), "--json", "-o", str(tmp_path / "b"),
        env={"EVALWH_CACHE_DIR": str(shared)},
    )  # fmt: skip
    stats = json.loads(second.stdout)["stats"]
    assert stats["cache_hits"] == 46 and stats["requests"] == 2  # math-4 errors are not cached
    info = run_cli("cache", "info", "--json", "--cache-dir", str(shared), "-o", str(tmp_path / "b"))
    assert json.loads(info.stdout)["warehouse"] == str(shared / "cache.duckdb")
    assert json.loads(info.stdout)["entries"] == 46
    # without it, the second warehouse's own cache is empty: nothing was cached there
    own = run_cli("cache", "info", "--json", "-o", str(tmp_path / "b"))
    assert json.loads(own.stdout)["entries"] == 0


def test_cache_clear_deletes_one_models_older_or_all_entries(
    quickstart: Path, tmp_path: Path
) -> None:
    """`evalwh cache clear`: by provider model name, by age, then everything; the count it
    reports is what left the cache, and stored runs stay."""
    shared = tmp_path / "cc"
    where = ("--cache-dir", str(shared), "-o", str(tmp_path / "out"))
    assert run_cli("run", str(quickstart), "-q", *where).returncode == 0

    def entries() -> dict[str, int]:
        info = json.loads(run_cli("cache", "info", "--json", *where).stdout)
        by_model = {r["model"]: r["entries"] for r in info["by_model"]}
        assert sum(by_model.values()) == info["entries"]
        return by_model

    assert entries() == {"mock-large": 24, "mock-small": 22}

    def clear(*args: str) -> int:
        done = run_cli("--json", "cache", "clear", *args, *where)
        assert done.returncode == 0, done.stderr
        return int(json.loads(done.stdout)["removed"])

    assert clear("--model", "mock-small") == 22
    assert entries() == {"mock-large": 24}
    assert clear("--model", "no-such-model") == 0
    assert clear("--older-than", "1") == 0  # every entry is minutes old
    assert entries() == {"mock-large": 24}
    said = run_cli("cache", "clear", "--older-than", "0", *where)
    assert said.stdout == "removed 24 cached answer(s)\n"
    assert entries() == {}
    assert clear() == 0
    runs = json.loads(run_cli("list", "--json", "-o", str(tmp_path / "out")).stdout)["runs"]
    assert len(runs) == 1  # the run history is untouched
    # no cache warehouse yet: nothing to clear, and none is created
    fresh = ("--cache-dir", str(tmp_path / "none"), "-o", str(tmp_path / "out2"))
    assert json.loads(run_cli("--json", "cache", "clear", *fresh).stdout) == {"removed": 0}
    assert not (tmp_path / "none" / "cache.duckdb").exists()
