"""evaluation.stats and `manage.py ab_stats` against values computed independently.

Reference values come from R (binom.test), textbook examples worked by hand (Cohen's kappa,
Krippendorff's alpha), and scipy/numpy reached through other code paths than the module's.
"""

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evaluation import stats
from evaluation.stats import VoteRecord, VotesError
from evaluation.votes_csv import read_votes

ROOT = Path(__file__).resolve().parents[2]


def votes_from(rows):
    return [VoteRecord(*row) for row in rows]


def decisive_votes(first_wins: int, second_wins: int, ties: int = 0, both_bad: int = 0):
    """One rater, one vote per item; the first system always on the left."""
    choices = ["left"] * first_wins + ["right"] * second_wins + ["tie"] * ties + ["both_bad"] * both_bad
    return votes_from((f"i{n}", "r1", "X", "Y", c) for n, c in enumerate(choices))


def test_it_counts_outcomes_by_system_not_by_side():
    votes = votes_from(
        [
            ("1", "r1", "X", "Y", "left"),  # X wins
            ("2", "r1", "Y", "X", "left"),  # Y wins
            ("3", "r1", "Y", "X", "right"),  # X wins
            ("4", "r1", "X", "Y", "tie"),
            ("5", "r1", "Y", "X", "both_bad"),
        ]
    )
    x = stats.tally(votes, "X")
    assert (x.wins, x.losses, x.ties, x.both_bad) == (2, 1, 1, 1)
    assert x.win_rate == pytest.approx((2 + 0.5) / 4)
    y = stats.tally(votes, "Y")
    assert (y.wins, y.losses, y.ties, y.both_bad) == (1, 2, 1, 1)


def test_it_matches_r_binom_test_for_clopper_pearson_and_sign_test():
    # R: binom.test(7, 10) -> p-value = 0.3438, 95% CI 0.3475471 0.9332605
    low, high = stats.clopper_pearson(7, 10)
    assert low == pytest.approx(0.3475471, abs=1e-7)
    assert high == pytest.approx(0.9332605, abs=1e-7)
    assert stats.exact_binomial_p(7, 10) == pytest.approx(0.34375)
    # No successes: the interval has the closed form [0, 1 - (alpha/2)^(1/n)].
    assert stats.clopper_pearson(0, 12) == pytest.approx((0.0, 1 - 0.025 ** (1 / 12)), abs=1e-12)


def test_it_agrees_with_the_beta_quantiles_and_the_binomial_sum():
    for k, n in [(3, 17), (25, 40), (61, 100)]:
        low, high = stats.clopper_pearson(k, n)
        assert low == pytest.approx(scipy_stats.beta.ppf(0.025, k, n - k + 1), rel=1e-9)
        assert high == pytest.approx(scipy_stats.beta.ppf(0.975, k + 1, n - k), rel=1e-9)
        # Two-sided sign test by hand: twice the smaller tail, capped at 1.
        tail = sum(math.comb(n, i) for i in range(0, min(k, n - k) + 1)) / 2**n
        assert stats.exact_binomial_p(k, n) == pytest.approx(min(1.0, 2 * tail), rel=1e-9)


def test_it_leaves_ties_and_both_bad_out_of_the_sign_test():
    summary = stats.summarize(decisive_votes(7, 3, ties=5, both_bad=4))
    assert summary["sign_test_p"] == pytest.approx(0.34375)
    x = summary["systems"]["X"]
    assert (x["wins"], x["losses"], x["ties"], x["both_bad"]) == (7, 3, 5, 4)
    assert x["win_rate"] == pytest.approx((7 + 2.5) / 15)
    assert (x["ci_low"], x["ci_high"]) == pytest.approx((0.3475471, 0.9332605), abs=1e-7)
    assert summary["systems"]["Y"]["win_rate"] == pytest.approx(1 - x["win_rate"])


def test_it_measures_position_bias_on_sides():
    # X is always on the left and wins 9 of 10: that is also a 9-1 left-side record.
    votes = decisive_votes(9, 1)
    bias = stats.position_bias(votes)
    assert (bias.left_wins, bias.right_wins) == (9, 1)
    assert bias.p_value == pytest.approx(22 / 1024)  # 2 * (C(10,9) + C(10,10)) / 2^10
    # Alternating sides with X always winning: no side bias at all.
    balanced = votes_from(
        (f"i{n}", "r", *(("X", "Y", "left") if n % 2 else ("Y", "X", "right"))) for n in range(10)
    )
    assert stats.position_bias(balanced).p_value == pytest.approx(1.0)


def test_it_computes_cohens_kappa_like_the_textbook():
    # Wikipedia's worked example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa = 0.4.
    pairs = [("X", "X")] * 20 + [("X", "Y")] * 5 + [("Y", "X")] * 10 + [("Y", "Y")] * 15
    votes = []
    for n, (first, second) in enumerate(pairs):
        for rater, winner in (("ann", first), ("ben", second)):
            votes.append(VoteRecord(f"i{n}", rater, "X", "Y", "left" if winner == "X" else "right"))
    result = stats.agreement(votes)
    assert result.measure == "kappa"
    assert result.value == pytest.approx(0.4)
    assert result.shared_items == 50


def test_it_expresses_votes_as_systems_before_measuring_agreement():
    # The two raters saw opposite sides but agree on every winner: kappa is 1, not -1.
    votes = []
    for n in range(6):
        winner_left = n % 3 != 0
        votes.append(VoteRecord(f"i{n}", "ann", "X", "Y", "left" if winner_left else "right"))
        votes.append(VoteRecord(f"i{n}", "ben", "Y", "X", "right" if winner_left else "left"))
    assert stats.agreement(votes).value == pytest.approx(1.0)


def alpha_by_hand(units: list[list[str]]) -> float:
    """Krippendorff's nominal alpha from its coincidence matrix (Krippendorff 2011, section C)."""
    values = sorted({v for unit in units for v in unit})
    o = {(c, k): 0.0 for c in values for k in values}
    for unit in units:
        m = len(unit)
        if m < 2:
            continue
        for i, c in enumerate(unit):
            for j, k in enumerate(unit):
                if i != j:
                    o[c, k] += 1 / (m - 1)
    n_c = {c: sum(o[c, k] for k in values) for c in values}
    n = sum(n_c.values())
    observed = sum(o[c, k] for c in values for k in values if c != k)
    expected = sum(n_c[c] * n_c[k] for c in values for k in values if c != k) / (n - 1)
    return 1 - observed / expected


def test_it_computes_krippendorffs_alpha_for_more_raters():
    # Three raters, three items: X X X / X X Y / Y Y Y. By hand: Do = 2/9, De = 5/9, alpha = 0.6.
    units = [["X", "X", "X"], ["X", "X", "Y"], ["Y", "Y", "Y"]]
    votes = [
        VoteRecord(f"i{u}", f"r{r}", "X", "Y", "left" if winner == "X" else "right")
        for u, unit in enumerate(units)
        for r, winner in enumerate(unit)
    ]
    result = stats.agreement(votes)
    assert result.measure == "alpha"
    assert result.value == pytest.approx(0.6)
    assert alpha_by_hand(units) == pytest.approx(0.6)


def test_it_handles_missing_judgements_in_alpha():
    # Four raters, not everyone on every item, four outcome kinds.
    outcomes = {
        "i1": ["X", "X", "tie"],
        "i2": ["Y", "Y", "Y", "Y"],
        "i3": ["both_bad", "both_bad"],
        "i4": ["X", "tie", "X", "X"],
        "i5": ["Y", "X"],
        "i6": ["tie"],
    }
    vote_for = {"X": "left", "Y": "right", "tie": "tie", "both_bad": "both_bad"}
    votes = [
        VoteRecord(item, f"r{r}", "X", "Y", vote_for[outcome])
        for item, unit in outcomes.items()
        for r, outcome in enumerate(unit)
    ]
    result = stats.agreement(votes)
    assert result.measure == "alpha"
    assert result.value == pytest.approx(alpha_by_hand(list(outcomes.values())), abs=1e-9)


def test_it_bootstraps_like_scipy_over_items():
    # Votes cluster by item: two raters per item who always agree.
    rng = np.random.default_rng(3)
    votes = []
    for n in range(60):
        choice = rng.choice(["left", "right", "tie", "both_bad"], p=[0.45, 0.3, 0.15, 0.1])
        votes += [VoteRecord(f"i{n}", "ann", "X", "Y", choice), VoteRecord(f"i{n}", "ben", "X", "Y", choice)]
    low, high = stats.bootstrap_win_rate_ci(votes, "X")
    point = stats.tally(votes, "X").win_rate
    assert low < point < high
    # Same statistic through scipy's own bootstrap (different draws: agree within Monte Carlo error).
    score = {"left": 1.0, "tie": 0.5, "right": 0.0, "both_bad": 0.0}
    per_item_score = np.array([2 * score[v.vote] for v in votes[::2]])
    per_item_judged = np.array([0.0 if v.vote == "both_bad" else 2.0 for v in votes[::2]])
    reference = scipy_stats.bootstrap(
        (per_item_score, per_item_judged),
        lambda s, j: s.sum() / j.sum(),
        paired=True,
        vectorized=False,
        method="percentile",
        n_resamples=4000,
        rng=np.random.default_rng(11),
    ).confidence_interval
    assert low == pytest.approx(reference.low, abs=0.02)
    assert high == pytest.approx(reference.high, abs=0.02)
    # Resampling items, not votes: the same votes as if independent give a narrower interval.
    independent = [VoteRecord(f"{v.item}-{v.rater}", v.rater, "X", "Y", v.vote) for v in votes]
    ind_low, ind_high = stats.bootstrap_win_rate_ci(independent, "X")
    assert (high - low) > (ind_high - ind_low)


def test_it_bootstraps_reproducibly_and_mirrors_the_two_systems():
    votes = decisive_votes(12, 8, ties=4)
    first = stats.bootstrap_win_rate_ci(votes, "X")
    assert stats.bootstrap_win_rate_ci(votes, "X") == first
    y_low, y_high = stats.bootstrap_win_rate_ci(votes, "Y")
    assert (y_low, y_high) == pytest.approx((1 - first[1], 1 - first[0]))


def test_it_refuses_anything_but_two_systems():
    with pytest.raises(VotesError, match="exactly two systems; found 3"):
        stats.summarize(votes_from([("1", "r", "X", "Y", "left"), ("2", "r", "X", "Z", "left")]))
    with pytest.raises(VotesError, match="no votes"):
        stats.summarize([])


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("item,rater,left_system,vote\n1,a,X,left\n", "missing column\\(s\\): right_system"),
        ("item,rater,left_system,right_system,vote\n1,a,X,Y,up\n", "row 2, column vote: 'up' is not one of"),
        ("item,rater,left_system,right_system,vote\n1,a,X,X,left\n", "row 2: left_system and right_system"),
        ("item,rater,left_system,right_system,vote\n1,a,X,Y,left\n1,a,Y,X,tie\n", "row 3: rater 'a' already"),
        ("item,rater,left_system,right_system,vote\n1,,X,Y,left\n", "row 2, column rater: empty"),
        ("item,rater,left_system,right_system,vote\n", "no votes"),
    ],
)
def test_it_says_what_is_wrong_with_a_votes_file(rows, message):
    with pytest.raises(VotesError, match=message):
        read_votes(rows.splitlines(keepends=True))


def write_votes(path: Path, rows) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "rater", "left_system", "right_system", "vote"])
        writer.writerows(rows)


def run_ab_stats(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ROOT / ".venv/bin/python"), "manage.py", "ab_stats", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_ab_stats_command_writes_the_documented_json(tmp_path):
    # 10 items x 2 raters. hpd wins 11, ar wins 5, 2 ties, 2 both bad; sides alternate by item.
    outcomes = ["hpd"] * 11 + ["ar"] * 5 + ["tie"] * 2 + ["both_bad"] * 2
    rows = []
    for n, outcome in enumerate(outcomes):
        item = n // 2
        left, right = ("hpd", "ar") if item % 2 == 0 else ("ar", "hpd")
        vote = outcome if outcome in ("tie", "both_bad") else ("left" if outcome == left else "right")
        rows.append((f"p{item}", "carol" if n % 2 == 0 else "dave", left, right, vote))
    votes_csv, out = tmp_path / "votes.csv", tmp_path / "out.json"
    write_votes(votes_csv, rows)

    done = run_ab_stats("--votes", str(votes_csv), "--json", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())

    assert set(result) == {"systems", "sign_test_p", "position_bias_p", "agreement"}
    hpd = result["systems"]["hpd"]
    assert set(hpd) == {
        "wins", "losses", "ties", "both_bad", "win_rate", "ci_low", "ci_high", "bootstrap_ci_low", "bootstrap_ci_high"
    }  # fmt: skip
    assert (hpd["wins"], hpd["losses"], hpd["ties"], hpd["both_bad"]) == (11, 5, 2, 2)
    assert hpd["win_rate"] == pytest.approx(12 / 18)
    ci = scipy_stats.binomtest(11, 16).proportion_ci(method="exact")
    assert (hpd["ci_low"], hpd["ci_high"]) == pytest.approx((ci.low, ci.high))
    assert hpd["bootstrap_ci_low"] < hpd["win_rate"] < hpd["bootstrap_ci_high"]
    assert result["systems"]["ar"]["win_rate"] == pytest.approx(6 / 18)
    assert result["sign_test_p"] == pytest.approx(sum(math.comb(16, i) for i in range(6)) * 2 / 2**16)
    left_wins = sum(r[4] == "left" for r in rows)
    right_wins = sum(r[4] == "right" for r in rows)
    assert result["position_bias_p"] == pytest.approx(
        scipy_stats.binomtest(left_wins, left_wins + right_wins).pvalue
    )
    assert set(result["agreement"]) == {"kappa"}
    assert -1 <= result["agreement"]["kappa"] <= 1


def test_ab_stats_command_switches_to_alpha_for_three_raters(tmp_path):
    rows = [
        (f"p{i}", r, "hpd", "ar", "left" if (i + j) % 3 else "tie")
        for i in range(8)
        for j, r in enumerate("abc")
    ]
    votes_csv, out = tmp_path / "votes.csv", tmp_path / "out.json"
    write_votes(votes_csv, rows)
    done = run_ab_stats("--votes", str(votes_csv), "--json", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    units = [["hpd" if (i + j) % 3 else "tie" for j in range(3)] for i in range(8)]
    assert result["agreement"]["alpha"] == pytest.approx(alpha_by_hand(units))


def test_ab_stats_command_names_the_bad_row(tmp_path):
    votes_csv, out = tmp_path / "votes.csv", tmp_path / "out.json"
    write_votes(votes_csv, [("p1", "carol", "hpd", "ar", "left"), ("p2", "carol", "hpd", "ar", "A")])
    done = run_ab_stats("--votes", str(votes_csv), "--json", str(out))
    assert done.returncode != 0
    assert "row 3, column vote: 'A' is not one of left, right, tie, both_bad" in done.stderr
    assert not out.exists()


def test_stats_module_imports_no_django():
    code = "import sys, evaluation.stats, evaluation.votes_csv; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0
