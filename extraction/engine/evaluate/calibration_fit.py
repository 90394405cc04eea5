"""evaluate --fit-calibration: one confidence scaling (slope, bias) per decoder, fitted on this run's
values and those of earlier --json outputs (--calibration-with), written to slotwise.json."""

from __future__ import annotations

import json
import pathlib

from extraction.engine import calibration
from extraction.engine.api import model_settings
from extraction.engine.evaluate.decoder_runs import Run, UsageError
from extraction.engine.evaluate.report import write


def calibration_inputs(args, ex) -> tuple[bool, list[dict]]:
    """(--fit-calibration, the earlier outputs to pool), checked against the model ex serves."""
    fit = getattr(args, "fit_calibration", False)
    pooled = getattr(args, "calibration_with", None) or []
    if pooled and not fit:
        raise UsageError("--calibration-with needs --fit-calibration")
    if fit and ex.random_standin:
        raise UsageError("--fit-calibration needs a model directory (got the random stand-in)")
    try:
        return fit, [pooled_points(path, ex.model_name, ex.extractive) for path in pooled]
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def pooled_points(path: str, model_name: str, extractive: bool) -> dict:
    """An earlier --json output's calibration points, checked to be of this model and decoding mode."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if "calibration_points" not in data:
        raise ValueError(f"{path}: no calibration_points (written by an older evaluate?)")
    if data.get("model") != model_name or bool(data.get("extractive")) != bool(extractive):
        raise ValueError(
            f"{path}: model {data.get('model')!r} extractive={data.get('extractive')} does not match "
            f"{model_name!r} extractive={extractive}"
        )
    return data


def pooled(own: list, earlier: list[dict], key: str, decoder: str) -> tuple[list[float], list[bool]]:
    """(confidences, correct) of this run's points and the earlier outputs' (their --json key)."""
    confs = [c for _, c, _ in own]
    correct = [y for _, _, y in own]
    for e in earlier:
        for c, y in e.get(key, {}).get(decoder, []):
            confs.append(float(c))
            correct.append(bool(y))
    return confs, correct


def data_name(path: str) -> str:
    p = pathlib.Path(path)
    return f"{p.parent.name}/{p.name}"


def write_calibration(model_dir, best: dict[str, Run], n: int, data: str, earlier, extractive):
    """Fit a scaling per decoder on this run's points and the pooled ones; store it in slotwise.json."""
    path = pathlib.Path(model_dir) / "slotwise.json"
    conf = model_settings(model_dir)
    block: dict = {}
    points: dict[str, int] = {}
    curves: dict[str, list] = {}
    na: dict[str, dict] = {}
    for d, run in best.items():
        confs, correct = pooled(run.points, earlier, "calibration_points", d)
        fit = calibration.fit_scaling(confs, correct)
        block[d] = fit.stored()
        points[d] = len(confs)
        curves[d] = calibration.precision_curve(confs, correct, fit)
        # an n/a's confidence gets a scaling of its own: the model is sure of its n/a in another
        # way than of its values (one fit for both left one of them off)
        na_confs, na_correct = pooled(run.na_points, earlier, "calibration_points_na", d)
        na[d] = calibration.fit_scaling(na_confs, na_correct).stored()
    block.update(
        {
            "extractive": bool(extractive),
            "products": n + sum(int(e.get("products", 0)) for e in earlier),
            "data": [data_name(data)] + [data_name(e.get("data", "?")) for e in earlier],
            "points": points,
            "fit": "sigmoid(a * logit(c) + b), a and b by NLL over values on judged pairs (correct iff VC)",
            # per decoder: [threshold, precision, values, Wilson 95% low, high] over the same values,
            # confidences calibrated with that scaling (calibration.precision_curve)
            "precision_curve": curves,
            # per decoder: the scaling of n/a confidences, fitted on the n/a predicted on judged
            # pairs (correct iff gold n/a)
            "na": na,
        }
    )
    conf["calibration"] = block
    path.write_text(json.dumps(conf, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    fits = ", ".join(f"{d} {calibration.Scaling.of(block[d])} ({points[d]} values)" for d in best)
    write(f"calibration written to {path}: {fits}; data {', '.join(block['data'])}")
