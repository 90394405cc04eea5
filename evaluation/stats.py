"""Statistics of blind pairwise votes: win rates, intervals, tests and inter-rater agreement.

No Django here: the `ab_stats` command, the results page and the tests share this one module.
Formulas come from well-kept libraries (scipy's exact binomial test and Clopper-Pearson interval,
statsmodels' Cohen's kappa, the krippendorff package's alpha) rather than being written by hand.

A vote is about sides (left/right, shown to the rater as A/B); every statistic except the
position-bias check is about systems, so votes are first turned into outcomes: the name of the
system that won, "tie" or "both_bad".
"""

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

LEFT, RIGHT, TIE, BOTH_BAD = "left", "right", "tie", "both_bad"
VOTE_CHOICES = (LEFT, RIGHT, TIE, BOTH_BAD)
CONFIDENCE = 0.95
# Enough resamples that the percentile bounds move by well under a point between seeds.
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 12345


class VotesError(ValueError):
    """The votes cannot be analysed as given (the message says what and where)."""


@dataclass(frozen=True)
class VoteRecord:
    """One rater's vote on one item; `vote` names a side (left = A), not a system."""

    item: str
    rater: str
    left_system: str
    right_system: str
    vote: str

    @property
    def outcome(self) -> str:
        """The vote in terms of systems: the winner's name, "tie" or "both_bad"."""
        if self.vote == LEFT:
            return self.left_system
        if self.vote == RIGHT:
            return self.right_system
        return self.vote

    def shows(self, system: str) -> bool:
        return system in (self.left_system, self.right_system)


@dataclass(frozen=True)
class Tally:
    """Outcomes of the votes that showed one system."""

    wins: int
    losses: int
    ties: int
    both_bad: int

    @property
    def votes(self) -> int:
        return self.wins + self.losses + self.ties + self.both_bad

    @property
    def win_rate(self) -> float | None:
        """(wins + ties/2) / (wins + losses + ties); both-bad votes are reported apart."""
        judged = self.wins + self.losses + self.ties
        return (self.wins + self.ties / 2) / judged if judged else None

    @property
    def both_bad_rate(self) -> float | None:
        return self.both_bad / self.votes if self.votes else None


def systems_of(votes: Sequence[VoteRecord]) -> list[str]:
    """The two systems compared, in order of first appearance; anything else is an error."""
    seen: dict[str, None] = {}
    for vote in votes:
        seen.setdefault(vote.left_system)
        seen.setdefault(vote.right_system)
    if len(seen) != 2:
        names = ", ".join(seen) or "none"
        raise VotesError(f"the votes must compare exactly two systems; found {len(seen)}: {names}")
    return list(seen)


def tally(votes: Iterable[VoteRecord], system: str) -> Tally:
    wins = losses = ties = both_bad = 0
    for vote in votes:
        if not vote.shows(system):
            continue
        outcome = vote.outcome
        if outcome == system:
            wins += 1
        elif outcome == TIE:
            ties += 1
        elif outcome == BOTH_BAD:
            both_bad += 1
        else:
            losses += 1
    return Tally(wins, losses, ties, both_bad)


def clopper_pearson(successes: int, trials: int) -> tuple[float | None, float | None]:
    """Exact 95% interval of successes / trials (None, None when there are no trials)."""
    if trials == 0:
        return None, None
    interval = binomtest(successes, trials).proportion_ci(CONFIDENCE, method="exact")
    return float(interval.low), float(interval.high)


def exact_binomial_p(successes: int, trials: int) -> float | None:
    """Two-sided exact binomial test against 1/2: the sign test when ties are left out."""
    if trials == 0:
        return None
    return float(binomtest(successes, trials, 0.5, alternative="two-sided").pvalue)


def bootstrap_win_rate_ci(
    votes: Sequence[VoteRecord],
    system: str,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float | None, float | None]:
    """Percentile interval of the win rate, resampling items (votes on one item are correlated).

    Every system is resampled with the same item draws (same seed, same item order), so the two
    systems' intervals mirror each other exactly.
    """
    items: dict[str, int] = {}
    counts: list[list[int]] = []  # per item: wins, ties, judged (wins + losses + ties)
    for vote in votes:
        if not vote.shows(system):
            continue
        row = items.setdefault(vote.item, len(counts))
        if row == len(counts):
            counts.append([0, 0, 0])
        outcome = vote.outcome
        if outcome == BOTH_BAD:
            continue
        counts[row][0] += outcome == system
        counts[row][1] += outcome == TIE
        counts[row][2] += 1
    if not counts:
        return None, None
    per_item = np.asarray(counts, dtype=float)  # (items, 3)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(per_item), size=(samples, len(per_item)))  # (samples, items)
    totals = per_item[draws].sum(axis=1)  # (samples, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = (totals[:, 0] + totals[:, 1] / 2) / totals[:, 2]
    rates = rates[~np.isnan(rates)]
    if rates.size == 0:
        return None, None
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(rates, [tail, 100 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class PositionBias:
    """Does side A (left) win more than half of the decisive votes?"""

    left_wins: int
    right_wins: int

    @property
    def left_share(self) -> float | None:
        decisive = self.left_wins + self.right_wins
        return self.left_wins / decisive if decisive else None

    @property
    def p_value(self) -> float | None:
        return exact_binomial_p(self.left_wins, self.left_wins + self.right_wins)


def position_bias(votes: Iterable[VoteRecord]) -> PositionBias:
    votes = list(votes)
    return PositionBias(
        left_wins=sum(v.vote == LEFT for v in votes), right_wins=sum(v.vote == RIGHT for v in votes)
    )


@dataclass(frozen=True)
class Agreement:
    """Inter-rater agreement on outcomes: Cohen's kappa for two raters, else Krippendorff's alpha."""

    measure: str  # "kappa" or "alpha"
    value: float | None
    raters: int
    shared_items: int  # items judged by at least two raters


def agreement(votes: Sequence[VoteRecord]) -> Agreement:
    raters = sorted({v.rater for v in votes})
    items = sorted({v.item for v in votes})
    outcome_of = {(v.rater, v.item): v.outcome for v in votes}
    per_item = {item: sum((r, item) in outcome_of for r in raters) for item in items}
    shared = sum(n >= 2 for n in per_item.values())
    categories = sorted(set(outcome_of.values()))
    code = {category: i for i, category in enumerate(categories)}
    if len(raters) == 2:
        return Agreement("kappa", _cohens_kappa(outcome_of, raters, items, code), 2, shared)
    return Agreement("alpha", _krippendorff_alpha(outcome_of, raters, items, code), len(raters), shared)


def _cohens_kappa(outcome_of, raters, items, code) -> float | None:
    from statsmodels.stats.inter_rater import cohens_kappa  # slow import: only when needed

    first, second = raters
    table = np.zeros((len(code), len(code)))
    for item in items:
        if (first, item) in outcome_of and (second, item) in outcome_of:
            table[code[outcome_of[first, item]], code[outcome_of[second, item]]] += 1
    if table.sum() == 0:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(cohens_kappa(table, return_results=False))
    return None if math.isnan(value) else value


def _krippendorff_alpha(outcome_of, raters, items, code) -> float | None:
    import krippendorff

    data = np.full((len(raters), len(items)), np.nan)  # (raters, items); nan = not judged
    for r, rater in enumerate(raters):
        for i, item in enumerate(items):
            if (rater, item) in outcome_of:
                data[r, i] = code[outcome_of[rater, item]]
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if len(raters) < 2 or not pairable.any():
        return None
    try:
        value = float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    except ValueError:  # one value in the whole domain: agreement is undefined, not perfect
        return None
    return None if math.isnan(value) else value


def system_summary(votes: Sequence[VoteRecord], system: str, bootstrap: bool = True) -> dict:
    counts = tally(votes, system)
    ci_low, ci_high = clopper_pearson(counts.wins, counts.wins + counts.losses)
    summary = {
        "wins": counts.wins,
        "losses": counts.losses,
        "ties": counts.ties,
        "both_bad": counts.both_bad,
        "win_rate": counts.win_rate,
        "ci_low": ci_low,
        "ci_high": ci_high,
    }
    if bootstrap:
        summary["bootstrap_ci_low"], summary["bootstrap_ci_high"] = bootstrap_win_rate_ci(votes, system)
    return summary


def summarize(votes: Sequence[VoteRecord]) -> dict:
    """Everything `ab_stats --json` writes, in its documented layout."""
    if not votes:
        raise VotesError("there are no votes to analyse")
    first, second = systems_of(votes)
    first_counts = tally(votes, first)
    bias = position_bias(votes)
    agree = agreement(votes)
    return {
        "systems": {name: system_summary(votes, name) for name in (first, second)},
        "sign_test_p": exact_binomial_p(first_counts.wins, first_counts.wins + first_counts.losses),
        "position_bias_p": bias.p_value,
        "agreement": {agree.measure: agree.value},
    }


def breakdown(
    votes: Sequence[VoteRecord], system: str, groups_of: Callable[[VoteRecord], Iterable[str]]
) -> list[dict]:
    """Per-group tallies of `system` (a vote counts in every group `groups_of(vote)` names)."""
    grouped: dict[str, list[VoteRecord]] = {}
    for vote in votes:
        for group in groups_of(vote):
            grouped.setdefault(group, []).append(vote)
    rows = []
    for group in sorted(grouped):
        summary = system_summary(grouped[group], system, bootstrap=False)
        summary["group"] = group
        summary["votes"] = len(grouped[group])
        summary["items"] = len({v.item for v in grouped[group]})
        rows.append(summary)
    return rows
