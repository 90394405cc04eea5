"""Calibration of value confidences: expected calibration error and one Platt scaling per decoder.

Pure Python + numpy (scipy for the fit, imported when fitting); imports no torch, so the web
process may use it.

What is measured: the values a reviewer acts on, i.e. the non-n/a predictions of judged
(product, attribute) pairs; a value is correct iff it is VC (metric.py), wrong when VW or NV.
n/a predictions get a scaling of their own (fitted on the n/a predicted on judged pairs, correct
iff gold n/a); unjudged pairs are left out of the ECE and of the fits.

    ECE = sum over 10 equal-width bins b of |b| / N * |accuracy(b) - mean confidence(b)|
          (bin k holds k/10 <= c < (k+1)/10; c = 1.0 goes to the last bin)
    calibrated c' = sigmoid(a * logit(c) + b), c clipped to [1e-6, 1 - 1e-6] (exact 0 and 1 stay);
          a = 1, b = 0 is the identity; a temperature T (what older slotwise.json files store, a
          number) is a = 1 / T, b = 0
    a, b: minimise the mean negative log-likelihood of correctness (Platt scaling). A temperature
          alone cannot move an over-confident model's mass down where its values are right less
          than half the time: on the dev sets the bias took the 2-fold ECE from about 0.11 to 0.03
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BINS = 10
EPS = 1e-6
SLOPE_BOUNDS = (0.02, 50.0)
BIAS_BOUNDS = (-20.0, 20.0)
MIN_POINTS = 20  # fewer points (or only one class): no fit, the identity


def _clip(c):
    return np.clip(np.asarray(c, dtype=np.float64), EPS, 1.0 - EPS)


def logit(c):
    c = _clip(c)
    return np.log(c) - np.log1p(-c)


@dataclass(frozen=True)
class Scaling:
    """sigmoid(slope * logit(c) + bias): the calibration of one decoder's values (or n/a)."""

    slope: float = 1.0
    bias: float = 0.0

    @classmethod
    def of(cls, stored) -> Scaling | None:
        """A slotwise.json entry -> its scaling: {"slope": a, "bias": b}, or a number (a temperature
        T: slope 1/T); None for anything else (missing, non-finite, not positive)."""
        if isinstance(stored, Scaling):
            return stored
        if isinstance(stored, int | float) and not isinstance(stored, bool):
            return cls(1.0 / float(stored)) if math.isfinite(stored) and stored > 0 else None
        if isinstance(stored, dict):
            a, b = stored.get("slope"), stored.get("bias", 0.0)
            numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))
            if numbers and math.isfinite(a) and math.isfinite(b) and a > 0:
                return cls(float(a), float(b))
        return None

    @property
    def identity(self) -> bool:
        return self.slope == 1.0 and self.bias == 0.0

    def stored(self) -> dict:
        return {"slope": round(self.slope, 6), "bias": round(self.bias, 6)}

    def __str__(self) -> str:
        return f"a={self.slope:.3f} b={self.bias:+.3f}"


def apply_calibration(confidence: float, scaling) -> float:
    """sigmoid(a * logit(c) + b) (scaling: a Scaling, a temperature, or None); None and the identity
    leave c as it is (not even clipped), and so do exactly 0 and 1 (the mapping's limits: a value
    decoded without any confidence stays at 0)."""
    scaling = Scaling.of(scaling)
    if scaling is None or scaling.identity or confidence <= 0.0 or confidence >= 1.0:
        return confidence
    c = min(max(float(confidence), EPS), 1.0 - EPS)
    z = scaling.slope * (math.log(c) - math.log1p(-c)) + scaling.bias
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def calibrate(confidences, scaling) -> np.ndarray:
    """apply_calibration over an array."""
    c = np.asarray(confidences, dtype=np.float64)
    scaling = Scaling.of(scaling)
    if scaling is None or scaling.identity:
        return c
    out = 1.0 / (1.0 + np.exp(-(scaling.slope * logit(c) + scaling.bias)))
    return np.where((c <= 0.0) | (c >= 1.0), c, out)


def ece(confidences: Sequence[float], correct: Sequence[bool], bins: int = BINS) -> float | None:
    """Expected calibration error over equal-width bins; None without points."""
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    if c.size == 0:
        return None
    which = np.minimum((c * bins).astype(np.int64), bins - 1)
    which = np.maximum(which, 0)
    total = 0.0
    for b in range(bins):
        m = which == b
        if m.any():
            total += m.sum() / c.size * abs(y[m].mean() - c[m].mean())
    return float(total)


def nll(confidences, correct, scaling=None) -> float | None:
    """Mean negative log-likelihood of correctness under the scaling; None without points."""
    y = np.asarray(correct, dtype=np.float64)
    if y.size == 0:
        return None
    scaling = Scaling.of(scaling) or Scaling()
    z = scaling.slope * logit(confidences) + scaling.bias
    # -[y log s(z) + (1 - y) log(1 - s(z))] = softplus(z) - y z, computed stably
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def fit_scaling(confidences, correct) -> Scaling:
    """The (a, b) that minimise nll (bounded search over log a and b); the identity with fewer than
    MIN_POINTS points or only one class (nothing to learn from), and never worse than the identity
    on its own data."""
    y = np.asarray(correct, dtype=np.float64)
    if y.size < MIN_POINTS or y.min() == y.max():
        return Scaling()
    from scipy.optimize import minimize

    z = logit(confidences)

    def loss(p) -> float:
        s = math.exp(p[0]) * z + p[1]
        return float(np.mean(np.logaddexp(0.0, s) - y * s))

    bounds = [tuple(math.log(b) for b in SLOPE_BOUNDS), BIAS_BOUNDS]
    res = minimize(loss, np.zeros(2), method="L-BFGS-B", bounds=bounds)
    if not res.success or loss(res.x) > loss(np.zeros(2)):
        return Scaling()
    return Scaling(math.exp(float(res.x[0])), float(res.x[1]))


def cross_fitted(confidences, correct, groups, folds: int = 2) -> tuple[np.ndarray, list[Scaling]]:
    """Out-of-fold calibrated confidences: points are split by group (product index) mod folds; each
    fold is calibrated with the scaling fitted on the other folds. -> (calibrated confidences,
    scalings) where scalings[k] is the one applied to fold k (fitted without it)."""
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    fold = np.asarray(groups, dtype=np.int64) % folds
    out = c.copy()
    fits = []
    for k in range(folds):
        test = fold == k
        fit = fit_scaling(c[~test], y[~test])
        fits.append(fit)
        out[test] = calibrate(c[test], fit)
    return out, fits


def summary(confidences, correct, groups, stored=None) -> dict:
    """ECE / NLL raw, 2-fold cross-fitted over products, and with a stored scaling; the scaling
    fitted on every point (what --fit-calibration writes)."""
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    out = {"points": int(c.size), "accuracy": float(y.mean()) if y.size else None}
    out["ece_raw"] = ece(c, y)
    out["nll_raw"] = nll(c, y)
    cal, fits = cross_fitted(c, y, groups)
    out["ece_cross_fitted"] = ece(cal, y)
    out["nll_cross_fitted"] = nll(cal, y)
    out["fold_scalings"] = [f.stored() for f in fits]
    out["scaling"] = fit_scaling(c, y).stored()
    stored = Scaling.of(stored)
    if stored is not None:
        out["stored_scaling"] = stored.stored()
        out["ece_stored"] = ece(calibrate(c, stored), y)
    return out


CURVE_THRESHOLDS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 0.99)


def wilson(right: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion right / n (scipy's); (0, 1) without points. The one
    definition: the dev precision curve and the review screens' estimate both use it."""
    if n <= 0:
        return 0.0, 1.0
    from scipy.stats import binomtest

    interval = binomtest(right, n).proportion_ci(confidence, method="wilson")
    return float(interval.low), float(interval.high)


def precision_curve(confidences, correct, scaling, thresholds=CURVE_THRESHOLDS):
    """[threshold, precision, values, Wilson low, high] of the values whose calibrated confidence is
    at least each threshold (thresholds no value reaches are left out): what the review screens use
    to propose an auto-accept threshold before reviewers have judged enough of a model's values."""
    c = calibrate(confidences, scaling)
    y = np.asarray(correct, dtype=bool)
    rows = []
    for t in thresholds:
        chosen = c >= t
        n = int(chosen.sum())
        if not n:
            continue
        right = int(y[chosen].sum())
        low, high = wilson(right, n)
        rows.append([t, round(right / n, 4), n, round(low, 4), round(high, 4)])
    return rows
