"""One confidence scaling (slope, bias) per decoder, written to the model's slotwise.json:
- `evaluate --fit-calibration`: fitted on this run's values and those of earlier --json outputs
  (--calibration-with);
- `calibrate --model DIR a.json b.json ...`: fitted on earlier --json outputs alone, without decoding
  again (each output holds its raw confidences and whether each was right)."""

from __future__ import annotations

import json
import pathlib
import sys

from extraction.engine import base_model, calibration
from extraction.engine.api import default_model_dir, model_settings
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
    own = {d: (run.points, run.na_points) for d, run in best.items()}
    store(model_dir, fitted_block(own, earlier, n, [data_name(data)], extractive))


def fitted_block(
    own: dict[str, tuple[list, list]], earlier: list[dict], n: int, data: list[str], extractive
) -> dict:
    """slotwise.json's "calibration" block: per decoder of `own` ({decoder: (points, n/a points)},
    empty lists when only earlier outputs are fitted) the scaling of its values and of its n/a."""
    block: dict = {}
    points: dict[str, int] = {}
    curves: dict[str, list] = {}
    na: dict[str, dict] = {}
    for d, (own_points, own_na_points) in own.items():
        confs, correct = pooled(own_points, earlier, "calibration_points", d)
        fit = calibration.fit_scaling(confs, correct)
        block[d] = fit.stored()
        points[d] = len(confs)
        curves[d] = calibration.precision_curve(confs, correct, fit)
        # an n/a's confidence gets a scaling of its own: the model is sure of its n/a in another
        # way than of its values (one fit for both left one of them off)
        na_confs, na_correct = pooled(own_na_points, earlier, "calibration_points_na", d)
        na[d] = calibration.fit_scaling(na_confs, na_correct).stored()
    block.update(
        {
            "extractive": bool(extractive),
            "products": n + sum(int(e.get("products", 0)) for e in earlier),
            "data": data + [data_name(e.get("data", "?")) for e in earlier],
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
    return block


def store(model_dir, block: dict) -> None:
    path = pathlib.Path(model_dir) / "slotwise.json"
    conf = model_settings(model_dir)
    conf["calibration"] = block
    path.write_text(json.dumps(conf, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if (pathlib.Path(model_dir) / base_model.SUMS).is_file():
        base_model.write_sums(pathlib.Path(model_dir))  # a committed artifact: `make model` checks its sums
    fits = ", ".join(
        f"{d} {calibration.Scaling.of(block[d])} ({block['points'][d]} values)" for d in block["points"]
    )
    write(f"calibration written to {path}: {fits}; data {', '.join(block['data'])}")


def run_calibrate(args) -> int:
    """`calibrate --model DIR OUT.json ...`: the scaling of each decoder the outputs hold, fitted on
    their points alone (no decoding), into DIR's slotwise.json. Every output must be of DIR's model
    (its name) in one decoding mode (extractive or not)."""
    model_dir = pathlib.Path(args.model) if args.model else default_model_dir()
    try:
        if not (model_dir / "slotwise.json").is_file():
            raise UsageError(f"{model_dir}: no slotwise.json (not a model directory?)")
        first = json.loads(pathlib.Path(args.outputs[0]).read_text(encoding="utf-8"))
        extractive = bool(first.get("extractive"))
        earlier = [pooled_points(path, model_dir.name, extractive) for path in args.outputs]
        decoders = sorted({d for e in earlier for d in e["calibration_points"]})
        store(model_dir, fitted_block({d: ([], []) for d in decoders}, earlier, 0, [], extractive))
    except (OSError, ValueError) as exc:  # UsageError is a ValueError
        sys.stderr.write(f"{exc}\n")
        return 2
    return 0
