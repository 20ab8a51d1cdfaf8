"""What the analysis reads of a run's config (evalwh/analysis/runinfo.py): slice keys and
the cluster key."""

from __future__ import annotations

from evalwh.analysis.runinfo import cluster_key, commit_retries, split_keys


def test_slice_keys_are_split_on_commas_in_text_and_in_lists() -> None:
    assert split_keys("lang, length,,lang") == ["lang", "length"]
    assert split_keys(["lang,topic", "length"]) == ["lang", "topic", "length"]
    assert split_keys("lang length") == ["lang length"]
    assert split_keys(None) == []


def test_a_runs_commit_retries_come_from_its_stored_totals_and_default_to_none() -> None:
    assert commit_retries({"totals": '{"rows": 4, "commit_retries": 3}'}) == 3
    assert commit_retries({"totals": {"commit_retries": 2}}) == 2
    # a run from before the count, a run still running, a totals that is no JSON object
    assert commit_retries({"totals": '{"rows": 4}'}) == 0
    assert commit_retries({"totals": None}) == commit_retries({}) == 0
    assert commit_retries({"totals": "[1]"}) == commit_retries({"totals": "{"}) == 0
    assert commit_retries({"totals": '{"commit_retries": true}'}) == 0


def test_the_cluster_key_is_read_only_from_an_analysis_mapping() -> None:
    assert cluster_key({"analysis": {"cluster": "doc"}}) == "doc"
    assert cluster_key({"analysis": "doc"}) is None
    assert cluster_key({}) is None
