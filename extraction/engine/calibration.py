"""Calibration of value confidences: expected calibration error and one temperature per decoder.

Pure Python + numpy (scipy for the fit, imported when fitting); imports no torch, so the web
process may use it.

What is measured: the values a reviewer acts on, i.e. the non-n/a predictions of judged
(product, attribute) pairs; a value is correct iff it is VC (metric.py), wrong when VW or NV.
n/a predictions and unjudged pairs are left out of the ECE and of the fit (the temperature is still
applied to every confidence the Extractor returns, n/a ones included).

    ECE = sum over 10 equal-width bins b of |b| / N * |accuracy(b) - mean confidence(b)|
          (bin k holds k/10 <= c < (k+1)/10; c = 1.0 goes to the last bin)
    calibrated c' = sigmoid(logit(c) / T), c clipped to [1e-6, 1 - 1e-6] (exact 0 and 1 stay);
          T = 1 is the identity
    T: minimises the mean negative log-likelihood of correctness (bounded 1-D search over log T)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

BINS = 10
EPS = 1e-6
T_BOUNDS = (0.02, 50.0)
MIN_POINTS = 20  # fewer points (or only one class): no fit, T = 1


def _clip(c):
    return np.clip(np.asarray(c, dtype=np.float64), EPS, 1.0 - EPS)


def logit(c):
    c = _clip(c)
    return np.log(c) - np.log1p(-c)


def apply_temperature(confidence: float, temperature: float | None) -> float:
    """sigmoid(logit(c) / T); None or 1.0 leave c as it is (identity, not even clipped), and so do
    exactly 0 and 1 (the mapping's limits: a value decoded without any confidence stays at 0)."""
    if temperature is None or temperature == 1.0 or confidence <= 0.0 or confidence >= 1.0:
        return confidence
    c = min(max(float(confidence), EPS), 1.0 - EPS)
    z = (math.log(c) - math.log1p(-c)) / float(temperature)
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def calibrate(confidences, temperature: float | None) -> np.ndarray:
    """apply_temperature over an array."""
    c = np.asarray(confidences, dtype=np.float64)
    if temperature is None or temperature == 1.0:
        return c
    out = 1.0 / (1.0 + np.exp(-logit(c) / float(temperature)))
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


def nll(confidences, correct, temperature: float = 1.0) -> float | None:
    """Mean negative log-likelihood of correctness under sigmoid(logit(c) / T); None without points."""
    y = np.asarray(correct, dtype=np.float64)
    if y.size == 0:
        return None
    z = logit(confidences) / temperature
    # -[y log s(z) + (1 - y) log(1 - s(z))] = softplus(z) - y z, computed stably
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def fit_temperature(confidences, correct) -> float:
    """The T that minimises nll (bounded search over log T); 1.0 with fewer than MIN_POINTS points or
    only one class (nothing to learn a scale from)."""
    y = np.asarray(correct, dtype=np.float64)
    if y.size < MIN_POINTS or y.min() == y.max():
        return 1.0
    from scipy.optimize import minimize_scalar

    z = logit(confidences)

    def loss(log_t: float) -> float:
        s = z / math.exp(log_t)
        return float(np.mean(np.logaddexp(0.0, s) - y * s))

    lo, hi = (math.log(b) for b in T_BOUNDS)
    res = minimize_scalar(loss, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
    t = math.exp(res.x)
    return t if loss(res.x) <= loss(0.0) else 1.0  # never worse than the identity on its own data


def cross_fitted(confidences, correct, groups, folds: int = 2) -> tuple[np.ndarray, list[float]]:
    """Out-of-fold calibrated confidences: points are split by group (product index) mod folds; each
    fold is calibrated with the T fitted on the other folds. -> (calibrated confidences, temps) where
    temps[k] is the T applied to fold k (fitted without it)."""
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    fold = np.asarray(groups, dtype=np.int64) % folds
    out = c.copy()
    temps = []
    for k in range(folds):
        test = fold == k
        t = fit_temperature(c[~test], y[~test])
        temps.append(t)
        out[test] = calibrate(c[test], t)
    return out, temps


def summary(confidences, correct, groups, stored: float | None = None) -> dict:
    """ECE / NLL raw, 2-fold cross-fitted over products, and with a stored temperature; the T fitted
    on every point (what --fit-calibration writes)."""
    c = np.asarray(confidences, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    out = {"points": int(c.size), "accuracy": float(y.mean()) if y.size else None}
    out["ece_raw"] = ece(c, y)
    out["nll_raw"] = nll(c, y)
    cal, temps = cross_fitted(c, y, groups)
    out["ece_cross_fitted"] = ece(cal, y)
    out["nll_cross_fitted"] = nll(cal, y)
    out["fold_temperatures"] = temps
    out["temperature"] = fit_temperature(c, y)
    if stored is not None:
        out["stored_temperature"] = stored
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


def precision_curve(confidences, correct, temperature: float | None, thresholds=CURVE_THRESHOLDS):
    """[threshold, precision, values, Wilson low, high] of the values whose calibrated confidence is
    at least each threshold (thresholds no value reaches are left out): what the review screens use
    to propose an auto-accept threshold before reviewers have judged enough of a model's values."""
    c = calibrate(confidences, temperature)
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
