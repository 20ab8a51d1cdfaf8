"""sql/pairwise.sql: wins, ties and losses per pair and per case, the win rate with ties as half a
win, the sign test and the Clopper-Pearson interval that inverts it (so the two never disagree),
majority verdicts, Cohen's kappa and its Landis-Koch band, flip rates and the calibration/headline
flags of each comparison (also against scikit-learn's kappa and confusion matrix and SciPy's
binomial test, with repeats: a label counts once, the case is the unit), against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.warehouse import connect, queries
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.builders import NOW, rows_of, warehouse_with
from tests.sql.conftest import _judged, _pair_votes, _pairwise_label, _warehouse


def test_pairwise_counts_wins_and_labels_once_per_case_by_hand(tmp_path: Path) -> None:
    # bugs: the side names listed once per pair (DISTINCT dropped), cases counted per pair, a
    # pair too many, ineligible pairs counted as baseline wins or ties, a judge cost of 1 with
    # no cost, the majority verdict or the base rate taken with min(), a tie at three top
    # verdicts, another run's labels read. Comparison c, eligible pairs: k1 candidate x2,
    # baseline x1 -> candidate; k2 candidate, baseline -> tie; k3 candidate x2, baseline, tie
    # -> candidate; k4 candidate (labelled in run s only). Ineligible: k5 baseline, k5 tie.
    # Labels candidate, tie, candidate: n_labels 3, agreement 1, base rate 2/3. A chance
    # agreement of 1 / n^2 when the two sides share no class, or no row at all. Cases (more
    # winning than losing pairs): k1 won, k2 tied, k3 won (2 to 1), k4 won -> 3 won, 1 tied,
    # 0 lost: win rate (3 + 1/2) / 4; a case's share of wins (k1 2/3) taken for a win.
    con = _warehouse(tmp_path)
    _pair_votes(con, "k1", ["candidate", "candidate", "baseline"], "en")
    _pair_votes(con, "k2", ["candidate", "baseline"], "en")
    _pair_votes(con, "k3", ["candidate", "baseline", "candidate", "tie"], "en")
    _pair_votes(con, "k4", ["candidate"], "en")
    _pair_votes(con, "k5", ["baseline", "tie"], "en", eligible=False)
    for case, prefer in (("k1", "candidate"), ("k2", "tie"), ("k3", "candidate")):
        _pairwise_label(con, case, prefer)
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
        "VALUES ('s', 'pairwise', 'c', 'k4', 'baseline')"
    )
    # comparison d: the judge says candidate where the human says baseline (m1, m2): no class
    # in common, so no chance agreement at all: 0, and kappa (0 - 0) / (1 - 0) = 0
    for case in ("m1", "m2"):
        _pair_votes(con, case, ["candidate"], "en", comparison="d")
        _pairwise_label(con, case, "baseline", comparison="d")
    row, other = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.4, min_labels=1, max_flip_rate=0.5
    ).to_pylist()
    assert (other["comparison"], other["n_labels"], other["agreement"]) == ("d", 2, 0.0)
    assert (other["chance_agreement"], other["kappa"]) == (0.0, 0.0)
    assert (row["baseline"], row["candidate"]) == ("v × a", "v × b")
    assert (row["n_pairs"], row["n"], row["n_cases"], row["n_excluded"]) == (12, 10, 4, 2)
    assert (row["candidate_wins"], row["baseline_wins"], row["ties"]) == (6, 3, 1)
    assert (row["cases_won"], row["cases_tied"], row["cases_lost"]) == (3, 1, 0)
    assert row["win_rate"] == 3.5 / 4
    assert row["judge_cost_usd"] == 0
    assert (row["baseline_eligible_rate"], row["candidate_eligible_rate"]) == (1.0, 1.0)
    assert (row["n_labels"], row["agreement"]) == (3, 1.0)
    assert row["base_rate"] == pytest.approx(2 / 3)


# comparison -> (kappa band, confusion counts human x judge: (cand, cand), (cand, base),
# (base, cand), (base, base)), found by search so that kappa = (agreement - chance) /
# (1 - chance), computed in doubles as the query does, lands exactly on each band's edge or
# inside the next tenth
KAPPA_BANDS = {
    "at-0": ("slight", (0, 0, 1, 1)),  # kappa exactly 0
    "at-0.2": ("slight", (1, 0, 2, 1)),
    "at-0.25": ("fair", (1, 0, 3, 4)),
    "at-0.4": ("fair", (1, 0, 2, 6)),
    "at-0.46": ("moderate", (2, 0, 2, 3)),
    "at-0.6": ("moderate", (1, 0, 1, 6)),
    "at-0.67": ("substantial", (2, 0, 1, 3)),
    "at-0.8": ("substantial", (4, 0, 1, 5)),
    "at-0.82": ("almost perfect", (4, 0, 1, 7)),
    "below-0": ("poor", (0, 1, 1, 0)),
}


def test_pairwise_kappa_bands_on_their_edges_and_comparisons_without_labels(
    tmp_path: Path,
) -> None:
    # bugs: a Landis-Koch band edge moved ('<=' as '<', 0.20 as 0.30, ...; '< 0' as '<= 0');
    # a comparison without labels (n_labels 0, not 1) or without eligible pairs (no win-rate
    # interval) dropped by an inner join or given bounds; the win-rate interval of one case
    # missing, or its upper bound past 1; calibration and the flip flag with their limits
    # moved ('>=' as '>', '>' as '>=').
    con = _warehouse(tmp_path)
    for comparison, (_, cells) in KAPPA_BANDS.items():
        pairs = [("candidate", "candidate"), ("candidate", "baseline")]
        pairs += [("baseline", "candidate"), ("baseline", "baseline")]
        i = 0
        for (human, judge), count in zip(pairs, cells, strict=True):
            for _ in range(count):
                i += 1
                _pair_votes(con, f"x{i}", [judge], "en", comparison=comparison)
                _pairwise_label(con, f"x{i}", human, comparison=comparison)
    for i in range(11):  # won 11 of 11: Clopper-Pearson [0.025^(1/11), 1]
        _pair_votes(con, f"y{i}", ["candidate"], "en", comparison="unlabelled")
    _pair_votes(con, "y1", ["candidate"], "en", comparison="one-case")
    _pair_votes(con, "y2", ["candidate"], "en", comparison="ineligible", eligible=False)
    # 5 of at-0.8's 10 pairs flipped: a flip rate exactly at the limit of 0.5
    con.execute(
        "UPDATE pairs SET flipped = true WHERE comparison = 'at-0.8' "
        "AND case_id IN ('x1', 'x2', 'x3', 'x4', 'x5')"
    )
    rows = {
        r["comparison"]: r
        for r in queries.run_query(
            con, "pairwise", run_id="r", min_kappa=0.4, min_labels=9, max_flip_rate=0.5
        ).to_pylist()
    }
    # calibrated: kappa and the label count each at least their minimum (at-0.4: exactly
    # 0.4 on exactly 9 labels); at-0.8 flips at exactly the limit: not flagged
    assert {c for c, r in rows.items() if r["calibrated"]} == {"at-0.4", "at-0.8", "at-0.82"}
    assert {c for c, r in rows.items() if r["headline_eligible"]} == {"at-0.4", "at-0.8", "at-0.82"}
    assert (rows["at-0.8"]["flip_rate"], rows["at-0.8"]["flip_flagged"]) == (0.5, False)
    assert rows["ineligible"]["flip_flagged"] is False  # no eligible pair: no flip rate
    assert {c: r["kappa_band"] for c, r in rows.items() if c in KAPPA_BANDS} == {
        c: band for c, (band, _) in KAPPA_BANDS.items()
    }
    for edge in ("0", "0.2", "0.4", "0.6", "0.8"):
        assert rows[f"at-{edge}"]["kappa"] == float(edge), edge
    unlabelled, ineligible = rows["unlabelled"], rows["ineligible"]
    assert (unlabelled["n_labels"], unlabelled["kappa_band"], unlabelled["win_rate"]) == (
        0,
        "undefined",
        1.0,
    )
    assert (unlabelled["n_cases"], unlabelled["win_rate_hi"]) == (11, 1.0)
    # P(X >= 11; pi) = pi^11 = 0.025 at the lower bound
    assert unlabelled["win_rate_lo"] == pytest.approx(0.025 ** (1 / 11), abs=1e-12)
    one = rows["one-case"]
    assert (one["n_cases"], one["win_rate_lo"], one["win_rate_hi"]) == (
        1,
        pytest.approx(0.025, abs=1e-12),
        1.0,
    )
    assert (ineligible["n_cases"], ineligible["win_rate_lo"], ineligible["win_rate_hi"]) == (
        0,
        None,
        None,
    )


def _prefer(
    con: duckdb.DuckDBPyConnection, comparison: str, case: str, prefer: str, run: str = "r"
) -> None:
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
        "VALUES (?, 'pairwise', ?, ?, ?)",
        [run, comparison, case, prefer],
    )


def _confusion(
    con: duckdb.DuckDBPyConnection, comparison: str, cells: tuple[int, int, int, int], flips: int
) -> None:
    """Labelled cases by (human, judge): (candidate, candidate), (candidate, baseline),
    (baseline, candidate), (baseline, baseline) in these numbers; the first ``flips`` flipped."""
    pairs = [("candidate", "candidate"), ("candidate", "baseline")]
    pairs += [("baseline", "candidate"), ("baseline", "baseline")]
    i = 0
    for (human, judge), count in zip(pairs, cells, strict=True):
        for _ in range(count):
            _judged(con, comparison, f"k{i}", judge, flipped=i < flips)
            _prefer(con, comparison, f"k{i}", human)
            i += 1


def test_pairwise_counts_majority_verdicts_kappa_bands_and_headline_boundaries(
    tmp_path: Path,
) -> None:
    con = _warehouse(tmp_path)
    # 'a': k1 repeats candidate, candidate, baseline -> judge candidate (2 of 3), case won;
    # k2 candidate, baseline -> a tie between the top counts: judge 'tie', case tied; k3
    # baseline (candidate not ok) -> lost; k4 tie, flipped -> tied; k5 two ineligible pairs
    # (baseline, tie), baseline not ok. Cost 0.25 a pair.
    for repeat, verdict in enumerate(["candidate", "candidate", "baseline"]):
        _judged(con, "a", "k1", verdict, repeat=repeat, cost=0.25)
    for repeat, verdict in enumerate(["candidate", "baseline"]):
        _judged(con, "a", "k2", verdict, repeat=repeat, cost=0.25)
    _judged(con, "a", "k3", "baseline", candidate_ok=False, cost=0.25)
    _judged(con, "a", "k4", "tie", flipped=True, cost=0.25)
    for repeat, verdict in enumerate(["baseline", "tie"]):
        _judged(
            con, "a", "k5", verdict, repeat=repeat, eligible=False, baseline_ok=False, cost=0.25
        )
    # Labels (human, judge): k1 (candidate, candidate), k2 (tie, tie), k3 (candidate,
    # baseline), k4 (candidate, tie): n 4, agree 2 -> 0.5; human candidate 3, tie 1 -> base
    # rate 3/4; judge candidate 1, tie 2, baseline 1 -> chance (3*1 + 1*2) / 16 = 5/16;
    # kappa (1/2 - 5/16) / (11/16) = 3/11 ~ 0.27: 'fair'.
    for case, prefer in (("k1", "candidate"), ("k2", "tie"), ("k3", "candidate")):
        _prefer(con, "a", case, prefer)
    _prefer(con, "a", "k4", "candidate")
    # 'b': no labels of run r (run s labels b/k1), no costs.
    _judged(con, "b", "k1", "candidate")
    _judged(con, "b", "k2", "baseline")
    _prefer(con, "b", "k1", "baseline", run="s")
    # 'c': only an ineligible pair: no cases, no win rate, no flip rate.
    _judged(con, "c", "k1", "candidate", eligible=False)
    # 'd': one case, judge candidate, human tie: no category in common, so no chance term
    # (0): kappa (0 - 0) / 1 = 0 exactly, 'slight'. One case won: win rate 1, [0.025, 1].
    _judged(con, "d", "k1", "candidate")
    _prefer(con, "d", "k1", "tie")
    # 'e': 11 cases all won: the interval's upper end exactly 1.
    for i in range(11):
        _judged(con, "e", f"k{i}", "candidate")
    # Kappa exactly on each band's upper bound (in binary floating point too), and just
    # above the next bound down:
    #   k20 (1, 0, 2, 1): agree 2/4, chance 6/16 -> 0.2 'slight'
    #   k40 (1, 0, 2, 6): agree 7/9, chance 51/81 -> 0.4 'fair'
    #   k50 (1, 1, 0, 2): agree 3/4, chance 8/16 -> 0.5 'moderate', 1 flip of 4 = 0.25
    #   k60 (1, 0, 1, 6): agree 7/8, chance 38/64 -> 0.6 'moderate'
    #   k62 (2, 0, 1, 2): agree 4/5, chance 13/25 -> 8/13 ~ 0.615 'substantial'
    #   k80 (4, 0, 1, 5): agree 9/10, chance 50/100 -> 0.8 'substantial'
    #   k81 (4, 0, 1, 6): agree 10/11, chance 65/121 -> 48/59 ~ 0.814 'almost perfect'
    bands = {
        "k20": (1, 0, 2, 1),
        "k40": (1, 0, 2, 6),
        "k50": (1, 1, 0, 2),
        "k60": (1, 0, 1, 6),
        "k62": (2, 0, 1, 2),
        "k80": (4, 0, 1, 5),
        "k81": (4, 0, 1, 6),
    }
    for name, cells in bands.items():
        _confusion(con, name, cells, flips=1 if name == "k50" else 0)
    # Calibrated: n_labels >= 4 and kappa >= 0.5, both met exactly by k50; flagged: flip rate
    # over 0.25, k50's is exactly 0.25 (not flagged, so its headline stands).
    got = {
        r["comparison"]: r
        for r in queries.run_query(
            con, "pairwise", run_id="r", min_kappa=0.5, min_labels=4, max_flip_rate=0.25
        ).to_pylist()
    }
    assert list(got) == ["a", "b", "c", "d", "e", *bands]
    a = got["a"]
    assert (a["baseline"], a["candidate"], a["judge"], a["judge_model"]) == (
        "v × a",
        "v × b",
        "j",
        "jm",
    )
    counts = ("n_pairs", "n", "n_cases", "n_excluded", "candidate_wins", "baseline_wins", "ties")
    assert [a[k] for k in counts] == [9, 7, 4, 2, 3, 3, 1]
    assert (a["n_labels"], a["agreement"], a["base_rate"]) == (4, 0.5, 0.75)
    assert a["chance_agreement"] == 5 / 16
    assert math.isclose(a["kappa"], 3 / 11)
    assert a["kappa_band"] == "fair"
    assert (a["cases_won"], a["cases_tied"], a["cases_lost"]) == (1, 2, 1)
    assert a["win_rate"] == (1 + 2 / 2) / 4
    assert (a["win_rate_p"], a["verdict"]) == (1.0, "within noise")
    assert (a["n_flipped"], a["flip_rate"]) == (1, 1 / 7)
    assert (a["baseline_eligible_rate"], a["candidate_eligible_rate"]) == (7 / 9, 8 / 9)
    assert a["judge_cost_usd"] == 9 * 0.25
    b = got["b"]
    assert (b["n_labels"], b["kappa"], b["kappa_band"], b["judge_cost_usd"]) == (
        0,
        None,
        "undefined",
        0,
    )
    assert (b["n_pairs"], b["n_cases"], b["win_rate"]) == (2, 2, 0.5)
    c = got["c"]
    assert (c["n_pairs"], c["n"], c["n_cases"], c["n_excluded"]) == (1, 0, 0, 1)
    assert (c["win_rate"], c["win_rate_lo"], c["win_rate_hi"], c["flip_rate"]) == (None,) * 4
    assert (c["win_rate_p"], c["verdict"]) == (None, "no eligible pairs")
    assert (c["flip_flagged"], c["calibrated"], c["headline_eligible"]) == (False,) * 3
    d = got["d"]
    assert (d["n_labels"], d["agreement"], d["chance_agreement"], d["kappa"]) == (1, 0, 0, 0)
    assert d["kappa_band"] == "slight"
    # Clopper-Pearson on 1 of 1: P(X >= 1; pi) = pi = 0.025
    assert d["win_rate_lo"] == pytest.approx(0.025, abs=1e-12)
    assert d["win_rate_hi"] == 1.0
    assert (got["e"]["n_cases"], got["e"]["win_rate"], got["e"]["win_rate_hi"]) == (11, 1.0, 1.0)
    assert [
        (got[k]["kappa"], got[k]["kappa_band"]) for k in ("k20", "k40", "k50", "k60", "k80")
    ] == [
        (0.2, "slight"),
        (0.4, "fair"),
        (0.5, "moderate"),
        (0.6, "moderate"),
        (0.8, "substantial"),
    ]
    assert math.isclose(got["k62"]["kappa"], 8 / 13)
    assert math.isclose(got["k81"]["kappa"], 48 / 59)
    assert (got["k62"]["kappa_band"], got["k81"]["kappa_band"]) == ("substantial", "almost perfect")
    flags = ("n_labels", "flip_rate", "calibrated", "flip_flagged", "headline_eligible")
    assert {k: tuple(r[f] for f in flags) for k, r in got.items()} == {
        "a": (4, 1 / 7, False, False, False),
        "b": (0, 0.0, False, False, False),
        "c": (0, None, False, False, False),
        "d": (1, 0.0, False, False, False),
        "e": (0, 0.0, False, False, False),
        "k20": (4, 0.0, False, False, False),
        "k40": (9, 0.0, False, False, False),
        "k50": (4, 0.25, True, False, True),
        "k60": (8, 0.0, True, False, True),
        "k62": (5, 0.0, True, False, True),
        "k80": (10, 0.0, True, False, True),
        "k81": (11, 0.0, True, False, True),
    }


def _fixture_warehouse(
    tmp_path: Path, pairs: list[tuple[str, str, bool, bool]]
) -> duckdb.DuckDBPyConnection:
    """pairs: (human label, judge verdict, eligible, flipped) per case."""
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        pass
    con = duckdb.connect(str(path))
    for i, (human, verdict, eligible, flipped) in enumerate(pairs):
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, baseline_model, "
            "candidate_variant, candidate_model, judge, judge_model, verdict, flipped, eligible, "
            "baseline_ok, candidate_ok, created_at) VALUES ('r', 'c', ?, 0, 'v', 'a', 'v', 'b', 'j', 'jm', ?, ?, ?, "
            "true, ?, now())",
            [f"k{i}", verdict, flipped, eligible, eligible],
        )
        if human:
            con.execute(
                "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
                "VALUES ('r', 'pairwise', 'c', ?, ?, NULL, NULL)",
                [f"k{i}", human],
            )
    return con


def test_kappa_matches_the_textbook_example(tmp_path: Path) -> None:
    # 50 items: human/judge candidate-candidate 20, candidate-baseline 5, baseline-candidate 10,
    # baseline-baseline 15 -> po = 0.70, pe = 0.5*0.6 + 0.5*0.4 = 0.50, kappa = 0.40.
    rows = (
        [("candidate", "candidate", True, False)] * 20
        + [("candidate", "baseline", True, False)] * 5
        + [("baseline", "candidate", True, False)] * 10
        + [("baseline", "baseline", True, False)] * 15
    )
    con = _fixture_warehouse(tmp_path, rows)
    row = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()[0]
    assert row["n_labels"] == 50
    assert row["agreement"] == pytest.approx(0.70)
    assert row["chance_agreement"] == pytest.approx(0.50)
    assert row["kappa"] == pytest.approx(0.40)
    assert row["kappa_band"] == "fair"
    assert row["base_rate"] == pytest.approx(0.5)
    assert row["calibrated"] is False and row["headline_eligible"] is False
    confusion = {
        (r["human"], r["judge"]): r["n"]
        for r in queries.run_query(con, "calibration", run_id="r").to_pylist()
    }
    assert len(confusion) == 9
    assert (
        confusion[("candidate", "candidate")] == 20 and confusion[("baseline", "candidate")] == 10
    )
    assert confusion[("tie", "tie")] == 0


def _cohen_kappa(pairs: list[tuple[str, str]]) -> float:
    """An independent implementation (for checking the SQL): Cohen (1960)."""
    n = len(pairs)
    labels = sorted({x for p in pairs for x in p})
    po = sum(a == b for a, b in pairs) / n
    pe = sum(
        (sum(a == k for a, _ in pairs) / n) * (sum(b == k for _, b in pairs) / n) for k in labels
    )
    return (po - pe) / (1 - pe)


def test_win_rate_interval_flip_rate_and_three_class_kappa(tmp_path: Path) -> None:
    import itertools
    import random

    rng = random.Random(3)
    classes = ["baseline", "candidate", "tie"]
    rows = []
    for _ in range(60):
        human = rng.choice(classes)
        judge = human if rng.random() < 0.6 else rng.choice(classes)
        rows.append((human, judge, True, rng.random() < 0.2))
    rows += [(None, "candidate", False, False)] * 4  # excluded, unlabelled
    con = _fixture_warehouse(tmp_path, rows)
    row = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.2, min_labels=20, max_flip_rate=0.3
    ).to_pylist()[0]
    labelled = [(h, j) for h, j, e, _ in rows if h]
    assert row["kappa"] == pytest.approx(_cohen_kappa(labelled))
    eligible = [j for _, j, e, _ in rows if e]
    wins, ties, losses = (eligible.count(v) for v in ("candidate", "tie", "baseline"))
    assert (row["n"], row["n_excluded"], row["candidate_wins"]) == (60, 4, wins)
    assert (row["cases_won"], row["cases_tied"], row["cases_lost"]) == (wins, ties, losses)
    got = (row["win_rate"], row["win_rate_lo"], row["win_rate_hi"], row["win_rate_p"])
    assert got == pytest.approx(scipy_sign_test(wins, ties, losses), abs=1e-9)
    assert row["flip_rate"] == pytest.approx(sum(1 for *_, f in rows[:60] if f) / 60)
    del itertools


def test_undefined_kappa_is_not_a_headline(tmp_path: Path) -> None:
    con = _fixture_warehouse(tmp_path, [("tie", "tie", True, False)] * 25)  # chance agreement 1
    row = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()[0]
    assert (
        row["kappa"] is None
        and row["kappa_band"] == "undefined"
        and row["headline_eligible"] is False
    )


CLASSES = ["baseline", "candidate", "tie"]


def add_pairs(store: Warehouse, verdicts: dict[str, list[str]], labels: dict[str, str]) -> None:
    with write_connection(store.path) as con:
        for case, vs in verdicts.items():
            for r, v in enumerate(vs):
                con.execute(
                    "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
                    "baseline_model, candidate_variant, candidate_model, judge, judge_model, "
                    "verdict, flipped, eligible, baseline_ok, candidate_ok, metadata, created_at) "
                    "VALUES ('P', 'cmp', ?, ?, 'v', 'small', 'v', 'large', 'j', 'jm', ?, false, "
                    "true, true, true, ?, ?)",
                    [case, r, v, json.dumps({"topic": case[-1]}), NOW],
                )
        for case, prefer in labels.items():
            con.execute(
                "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
                "VALUES ('P', 'pairwise', 'cmp', ?, ?)",
                [case, prefer],
            )


def majority(vs: list[str]) -> str:
    counts = {v: vs.count(v) for v in set(vs)}
    top = max(counts.values())
    winners = [v for v, c in counts.items() if c == top]
    return winners[0] if len(winners) == 1 else "tie"


def test_kappa_and_confusion_count_each_label_once(tmp_path):
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    rng = random.Random(5)
    store = warehouse_with(tmp_path, {"P": rows_of({"x": [1]})})
    verdicts = {f"q{i}": [rng.choice(CLASSES) for _ in range(3)] for i in range(30)}
    labels = {c: rng.choice(CLASSES) for c in list(verdicts)[:17]}
    add_pairs(store, verdicts, labels)
    (row,) = store.query(
        "pairwise", run_id="P", min_kappa=0.0, min_labels=20, max_flip_rate=1.0
    ).to_pylist()
    human = [labels[c] for c in labels]
    judged = [majority(verdicts[c]) for c in labels]
    assert row["n_labels"] == 17  # not 51 (17 labels x 3 repeats)
    assert row["calibrated"] is False  # 17 < min_labels 20, whatever the repeats
    assert row["kappa"] == pytest.approx(cohen_kappa_score(human, judged), abs=1e-12)
    matrix = confusion_matrix(human, judged, labels=CLASSES)
    cells = {
        (r["human"], r["judge"]): r["n"] for r in store.query("calibration", run_id="P").to_pylist()
    }
    assert [[cells[(h, j)] for j in CLASSES] for h in CLASSES] == matrix.tolist()
    slices = store.query("calibration_slices", run_id="P", key="topic").to_pylist()
    assert sum(s["n"] for s in slices) == 17


def test_win_rate_takes_the_case_as_the_unit(tmp_path):
    # 14 cases won, 22 lost: the same numbers once and when every pair is repeated 3x
    # (108 pairs, 36 cases); p = 0.243 (SciPy), within noise
    store = warehouse_with(tmp_path, {"P": rows_of({"x": [1]})})
    verdicts = {f"q{i}": ["candidate" if i < 14 else "baseline"] * 3 for i in range(36)}
    add_pairs(store, verdicts, {})
    (row,) = store.query(
        "pairwise", run_id="P", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()
    assert (row["n"], row["n_cases"]) == (108, 36)
    assert (row["cases_won"], row["cases_tied"], row["cases_lost"]) == (14, 0, 22)
    got = (row["win_rate"], row["win_rate_lo"], row["win_rate_hi"], row["win_rate_p"])
    assert got == pytest.approx(scipy_sign_test(14, 0, 22), abs=1e-9)
    assert row["verdict"] == "within noise"


def scipy_sign_test(won: int, tied: int, lost: int) -> tuple[float, float, float, float]:
    """The reference: (win rate, its interval, p) from SciPy's exact binomial test of won
    against lost and its exact (Clopper-Pearson) interval, mapped to the win-rate scale with
    the tied cases fixed: tied / 2n + pi (won + lost) / n."""
    from scipy.stats import binomtest

    n, m = won + tied + lost, won + lost
    test = binomtest(won, m, 0.5)
    ci = test.proportion_ci(confidence_level=0.95, method="exact")
    rate = (won + tied / 2) / n
    return rate, tied / (2 * n) + ci.low * m / n, tied / (2 * n) + ci.high * m / n, test.pvalue


def _query(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    rows = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()
    return {r["comparison"]: r for r in rows}


def test_six_wins_seventeen_ties_one_loss_is_a_win_rate_of_60_percent_within_noise(
    tmp_path: Path,
) -> None:
    # examples/pairwise: the large model wins 6 cases, ties 17, loses 1. Bugs: ties counted as
    # non-wins (6/24 = 25 %), a Wilson interval on 6/24 that excludes 1/2 beside p = 0.125.
    # Win rate (6 + 17/2) / 24 = 14.5 / 24. Sign test on 6 against 1: 2 P(X <= 1), X ~ Bin(7,
    # 1/2) = 2 (1 + 7) / 128 = 0.125: within noise. Clopper-Pearson on 6 of 7: the upper bound
    # solves P(X <= 6; pi) = 1 - pi^7 = 0.025, the lower P(X >= 6; pi) = 7 pi^6 (1 - pi) + pi^7
    # = 0.025; each mapped to 17/48 + pi 7/24: [47.7 %, 64.5 %], holding 1/2 as p says.
    con = _warehouse(tmp_path)
    for i, verdict in enumerate(["candidate"] * 6 + ["tie"] * 17 + ["baseline"]):
        _judged(con, "c", f"k{i}", verdict)
    row = _query(con)["c"]
    assert (row["candidate_wins"], row["ties"], row["baseline_wins"]) == (6, 17, 1)
    assert (row["cases_won"], row["cases_tied"], row["cases_lost"]) == (6, 17, 1)
    assert row["win_rate"] == 14.5 / 24
    assert row["win_rate_p"] == pytest.approx(0.125, abs=1e-12)
    assert row["verdict"] == "within noise"
    lo = (row["win_rate_lo"] - 17 / 48) * 24 / 7
    hi = (row["win_rate_hi"] - 17 / 48) * 24 / 7
    assert 7 * lo**6 * (1 - lo) + lo**7 == pytest.approx(0.025, abs=1e-12)
    assert hi == pytest.approx(0.975 ** (1 / 7), abs=1e-12)
    assert (round(row["win_rate_lo"], 3), round(row["win_rate_hi"], 3)) == (0.477, 0.645)


def test_all_ties_no_eligible_case_and_one_case(tmp_path: Path) -> None:
    # bugs: an undefined interval clamped to [0, 1] or to [1/2, 1/2]; all ties called 'within
    # noise'; no eligible case given a p, a rate or a verdict; one case won called 'better'.
    # 'ties': 3 cases tied -> win rate 1/2 exactly, no decisive case: no interval, p = min(1,
    # 2 P(X <= 0)) with X ~ Bin(0, 1/2) = 1, 'same'. 'none': one ineligible pair. 'won': one
    # case won: [0.025, 1], p = min(1, 2 * 1/2... ) = 1. 'lost': one case lost: [0, 0.975].
    con = _warehouse(tmp_path)
    for i in range(3):
        _judged(con, "ties", f"k{i}", "tie")
    _judged(con, "none", "k0", "candidate", eligible=False)
    _judged(con, "won", "k0", "candidate")
    _judged(con, "lost", "k0", "baseline")
    rows = _query(con)
    keys = ("win_rate", "win_rate_lo", "win_rate_hi", "win_rate_p", "verdict")
    got = {c: tuple(r[k] for k in keys) for c, r in rows.items()}
    assert got["ties"] == (0.5, None, None, 1.0, "same")
    assert got["none"] == (None, None, None, None, "no eligible pairs")
    assert got["won"] == (1.0, pytest.approx(0.025, abs=1e-12), 1.0, 1.0, "within noise")
    assert got["lost"] == (0.0, 0.0, pytest.approx(0.975, abs=1e-12), 1.0, "within noise")
    assert (rows["none"]["cases_won"], rows["none"]["cases_tied"], rows["none"]["cases_lost"]) == (
        0,
        0,
        0,
    )


def test_repeats_count_each_case_once_by_its_mean_score(tmp_path: Path) -> None:
    # A case's score is the mean over its repeats of 1 (win), 1/2 (tie), 0 (loss); it is won
    # above 1/2, tied at 1/2, lost below. Bugs: the pairs taken as the unit, a case won on its
    # share of wins alone, a floating-point 1/2 (a third of 1.5) read as above or below it.
    # 'r': k0 (c, c, b) 2/3 won; k1 (c, b) 1/2 tied; k2 (c, t, b) 1/2 tied; k3 (t, t, b) 1/3
    # lost; k4 (c, t, t) 2/3 won; k5..k10 (c, c, c) won: 8 won, 2 tied, 1 lost of 11 cases.
    # The pairs: 23 wins, 5 ties, 4 losses (32). p = 2 P(X <= 1), X ~ Bin(9, 1/2) = 20/512.
    # 'r3': the same verdicts, each repeated three times: the same case numbers.
    con = _warehouse(tmp_path)
    cases = [
        ["candidate", "candidate", "baseline"],
        ["candidate", "baseline"],
        ["candidate", "tie", "baseline"],
        ["tie", "tie", "baseline"],
        ["candidate", "tie", "tie"],
    ] + [["candidate"] * 3] * 6
    for i, verdicts in enumerate(cases):
        for repeat, verdict in enumerate(verdicts):
            _judged(con, "r", f"k{i}", verdict, repeat=repeat)
        for repeat, verdict in enumerate(verdicts * 3):
            _judged(con, "r3", f"k{i}", verdict, repeat=repeat)
    rows = _query(con)
    r = rows["r"]
    assert (r["candidate_wins"], r["ties"], r["baseline_wins"], r["n"]) == (23, 5, 4, 32)
    assert (r["n_cases"], r["cases_won"], r["cases_tied"], r["cases_lost"]) == (11, 8, 2, 1)
    assert r["win_rate"] == 9 / 11
    assert r["win_rate_p"] == pytest.approx(20 / 512, abs=1e-12)
    assert r["verdict"] == "better"
    assert r["win_rate_lo"] > 0.5
    got = (r["win_rate"], r["win_rate_lo"], r["win_rate_hi"], r["win_rate_p"])
    assert got == pytest.approx(scipy_sign_test(8, 2, 1), abs=1e-9)
    case_keys = ("n_cases", "cases_won", "cases_tied", "cases_lost", "win_rate", "win_rate_lo")
    case_keys += ("win_rate_hi", "win_rate_p", "verdict")
    assert [rows["r3"][k] for k in case_keys] == [r[k] for k in case_keys]
    assert rows["r3"]["n"] == 96


def test_interval_excludes_one_half_exactly_when_p_is_below_005_and_the_verdict_says_so(
    tmp_path: Path,
) -> None:
    # Every (won, tied, lost) in 0..12 each, one comparison each, one case per pair: the win
    # rate, its interval and p against SciPy's exact binomial test and Clopper-Pearson
    # interval, and the property the page is read by: the interval excludes 1/2 <=> p < 0.05
    # <=> the verdict is better (interval above 1/2) or worse (below); the rate inside its
    # interval; no decisive case: no interval, p 1, 'same'. Bugs: a Wilson interval beside
    # the sign test (6 won, 17 tied, 1 lost: Wilson on 6/24 [12.0 %, 44.9 %] excludes 1/2,
    # p = 0.125), a one-sided p, a bound clamped or off by a rounding, a verdict's direction
    # or threshold moved ('<' as '<=').
    con = _warehouse(tmp_path)
    con.execute(
        "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
        "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
        "flipped, eligible, baseline_ok, candidate_ok, created_at) "
        "SELECT 'r', w || '-' || t || '-' || l, 'k' || i, 0, 'v', 'a', 'v', 'b', 'j', 'jm', "
        "CASE WHEN i < w THEN 'candidate' WHEN i < w + t THEN 'tie' ELSE 'baseline' END, "
        "false, true, true, true, now() "
        "FROM range(13) a(w), range(13) b(t), range(13) c(l), "
        "LATERAL (SELECT unnest(range(w + t + l)) AS i) "
    )
    rows = _query(con)
    assert len(rows) == 13**3 - 1  # 0-0-0 has no pair
    for won in range(13):
        for tied in range(13):
            for lost in range(13):
                if won + tied + lost == 0:
                    continue
                row = rows[f"{won}-{tied}-{lost}"]
                got = (row["win_rate"], row["win_rate_lo"], row["win_rate_hi"], row["win_rate_p"])
                where = (won, tied, lost, got, row["verdict"])
                if won + lost == 0:
                    assert got == (0.5, None, None, 1.0) and row["verdict"] == "same", where
                    continue
                assert got == pytest.approx(scipy_sign_test(won, tied, lost), abs=1e-9), where
                lo, rate, hi, p = (
                    row["win_rate_lo"],
                    row["win_rate"],
                    row["win_rate_hi"],
                    row["win_rate_p"],
                )
                assert lo <= rate <= hi, where
                assert (lo > 0.5) == (p < 0.05 and won > lost) == (row["verdict"] == "better"), (
                    where
                )
                assert (hi < 0.5) == (p < 0.05 and won < lost) == (row["verdict"] == "worse"), where
                assert (row["verdict"] == "within noise") == (lo <= 0.5 <= hi), where
