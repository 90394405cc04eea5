"""evaluate's output: the tables and lines it prints, the summary of a run, the predictions
file and the --json document."""

from __future__ import annotations

import json
import pathlib
import statistics
import sys

from extraction.engine import calibration
from extraction.engine import data as ave
from extraction.engine.evaluate import seen_values
from extraction.engine.evaluate.decoder_runs import Run, setting_text

# issue 17: HPD at least this many times as fast as each baseline (the median of the per-chunk
# ratios of one interleaved run, every decoder at its best settings, the same products); issue 49:
# as fast against AR at its honest best (ar-honest) as against the paper's AR-JSON
SPEED_BAR = {"ar": 4.0, "ar-honest": 4.0, "pld": 4.0, "fork": 1.5}


def write(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, r in enumerate(rows):
        write(
            "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        )
        if k == 0:
            write("  ".join("-" * w for w in widths))


def summary(
    run: Run, n: int, stored: calibration.Scaling | None = None, stored_na: calibration.Scaling | None = None
) -> dict:
    m = run.report.micro
    judged = m.pairs
    groups, confs, correct = zip(*run.points, strict=True) if run.points else ((), (), ())
    na_groups, na_confs, na_correct = zip(*run.na_points, strict=True) if run.na_points else ((), (), ())
    return {
        "f1": m.f1,
        "accuracy": m.VC / judged if judged else 0.0,  # VC share of the judged pairs
        "precision": m.precision,
        "recall": m.recall,
        "NV": m.NV,
        "gold_na": m.gold_na,
        "na_accuracy": m.na_accuracy,
        "na_precision": m.na_precision,
        "unjudged": m.unjudged,
        "unjudged_valued": m.unjudged_valued,
        "unjudged_value_share": m.unjudged_value_share,
        "shown_precision": m.shown_precision,
        "f1_unjudged_absent": m.f1_unjudged_absent,
        "calibration": calibration.summary(confs, correct, groups, stored),
        "calibration_na": calibration.summary(na_confs, na_correct, na_groups, stored_na),
        "products_per_second": run.products_per_second(n),
        "seconds": run.seconds,
        "forward_steps": run.forward_steps,
        "tokens_per_step": run.tokens_decoded / run.forward_steps if run.forward_steps else 0.0,
        "peak_memory_mb": run.peak_memory_mb,
        "settings": setting_text(run.setting),
        "layouts": sorted(set(run.layouts)),
        "tokens_decoded": run.tokens_decoded,
        "longest_decode_steps": run.max_value_steps,
        "longest_value_tokens": run.longest_value,
    }


DEFINITIONS = {
    "NV": "values predicted where gold is n/a",
    "gold_na": "judged pairs whose gold is n/a (NV + NN)",
    "na_accuracy": "NN / (NN + NV): share of the gold-n/a pairs predicted n/a",
    "na_precision": "NN / (NN + VN): share of the judged n/a predictions whose gold is n/a",
    "unjudged": "schema attributes of a product's category that its record does not list (no gold)",
    "unjudged_value_share": "share of the unjudged pairs given a value (not n/a)",
    "shown_precision": "VC / (VC + VW + NV + unjudged_valued): every value shown, unjudged ones counted "
    "wrong (meaningful where an untagged attribute is absent: OA-Mine)",
    "f1_unjudged_absent": "F1 with unjudged pairs counted as gold n/a (precision = shown_precision)",
    "ece": "expected calibration error, 10 equal-width bins, over the values (non-n/a predictions) "
    "on judged pairs; correct iff VC",
    "ece_cross_fitted": "ECE after sigmoid(a * logit(c) + b), a and b fitted by NLL on the other half "
    "of the products (2 folds by product index parity), pooled over both halves",
    "scaling": "a (slope) and b (bias) fitted on every evaluated product (what --fit-calibration writes)",
    "calibration_na": "the same figures for the n/a predictions on judged pairs (correct iff gold n/a), "
    "with their own scaling",
}


def ratio_summary(ratios: list[float]) -> dict | None:
    if not ratios:
        return None
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "pairs": len(ratios)}


def fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def scaling_text(stored: dict | None) -> str:
    return "-" if stored is None else str(calibration.Scaling.of(stored))


def quality_table(results: dict[str, dict], stored: dict[str, calibration.Scaling]) -> None:
    """n/a figures and calibration per decoder (definitions: DEFINITIONS, metric.py, calibration.py)."""
    write("n/a and confidence calibration per decoder (values = non-n/a predictions on judged pairs):")
    head = ["decoder", "F1", "NV", "gold n/a", "n/a acc", "n/a P", "unjudged", "unj valued", "shown P"]
    head += ["F1 unj n/a"]
    head += ["values", "value acc", "ECE raw", "ECE cal 2-fold", "fit", "n/a preds", "n/a ECE raw"]
    head += ["n/a ECE cal", "n/a fit"]
    has_stored = any(d in stored for d in results)
    if has_stored:
        head += ["stored", "ECE stored", "n/a ECE stored"]
    rows = [head]
    for d, sm in results.items():
        cal = sm["calibration"]
        row = [
            d,
            f"{sm['f1']:.3f}",
            str(sm["NV"]),
            str(sm["gold_na"]),
            fmt(sm["na_accuracy"]),
            fmt(sm["na_precision"]),
            str(sm["unjudged"]),
            fmt(sm["unjudged_value_share"]),
            fmt(sm["shown_precision"]),
            fmt(sm["f1_unjudged_absent"]),
            str(cal["points"]),
            fmt(cal["accuracy"]),
            fmt(cal["ece_raw"]),
            fmt(cal["ece_cross_fitted"]),
            scaling_text(cal["scaling"]),
        ]
        na = sm["calibration_na"]
        row += [
            str(na["points"]),
            fmt(na["ece_raw"]),
            fmt(na["ece_cross_fitted"]),
            scaling_text(na["scaling"]),
        ]
        if has_stored:
            row += [
                scaling_text(cal.get("stored_scaling")),
                fmt(cal.get("ece_stored")),
                fmt(na.get("ece_stored")),
            ]
        rows.append(row)
    table(rows)
    write(
        "n/a acc = NN/(NN+NV) of gold n/a; n/a P = NN/(NN+VN); unj valued = share of unjudged schema "
        "attributes given a value; shown P = VC/(VC+VW+NV+unjudged valued) and F1 unj n/a = F1 with "
        "unjudged as n/a (meaningful where untagged means absent: OA-Mine); ECE: 10 bins, correct iff VC; cal: sigmoid(a*logit(c)+b), a and b "
        "by NLL on the other half of the products; fit: a, b on every product (what --fit-calibration stores)"
    )


def seen_table(args, products, best: dict[str, Run], results: dict[str, dict]) -> None:
    """Accuracy on gold values seen in training against unseen ones (seen_values.py), per decoder."""
    folder = pathlib.Path(args.train_data) if args.train_data else seen_values.training_dir_for(args.data)
    if folder is None:
        write("seen/unseen values: no training split known for this file (--train-data DIR)")
        return
    known = seen_values.training_values(folder)
    rows = [["decoder", "seen pairs", "seen acc", "unseen pairs", "unseen acc"]]
    for d, run in best.items():
        texts = [{a: v.text for a, v in pred.items()} for pred in run.predictions]
        split = seen_values.seen_split(products, texts, known)
        results[d]["seen_values"] = split.to_dict()
        rows.append(
            [d, str(split.seen), fmt(split.seen_accuracy), str(split.unseen), fmt(split.unseen_accuracy)]
        )
    write(f"gold values seen / never seen in the training split of {folder} (acc = VC share):")
    table(rows)


def write_predictions(path: str, products, best: dict[str, Run]) -> None:
    """One JSON line per product: key, category, gold forms, and per decoder value + confidence."""
    with open(path, "w", encoding="utf-8") as f:
        for i, p in enumerate(products):
            line = {"key": p.key, "category": p.category, "gold": p.gold}
            for d, run in best.items():
                line[d] = {a: [v.text, v.confidence] for a, v in run.predictions[i].items()}
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


def write_header(args, ex, inputs) -> None:
    """The model, the data, and the decoding modes in force."""
    model_text = f"{ex.model_name} ({ex.model_revision})"
    if ex.random_standin:
        model_text += " RANDOM STAND-IN (--random-standin): outputs are noise, speed only"
    write(f"model: {model_text}")
    products, types = inputs.products, inputs.types
    write(f"data: {args.data}  products: {len(products)}  categories: {len(ave.by_category(products))}")
    if ex.extractive:
        write(
            "extractive: values are substrings of their document or n/a (pld unconstrained; --no-extractive: free)"
        )
    else:
        write("extractive: off (free greedy values)")
    if types.enum_names:
        state = "on" if ex.typed else "OFF (--no-typed: decoded as text)"
        na = "n/a allowed" if types.na else "no n/a (every pair has a value: micro F1 = accuracy)"
        write(f"enumerations {state}: {len(types.enum_names)} attributes from {types.source}, {na}")


def best_table(results: dict[str, dict]) -> None:
    """Each decoder at its best settings over every product, with HPD's speedup over it."""
    head = ["decoder", "settings", "products/s", "seconds", "F1", "P", "R", "fwd steps", "tok/step"]
    rows = [head + ["peak MB", "hpd speedup"]]
    for d, sm in results.items():
        r = sm.get("hpd_ratio")
        speed = f"{r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f})" if r else "-"
        rows.append(
            [
                d,
                sm["settings"],
                f"{sm['median_products_per_second']:.2f}",
                f"{sm['seconds']:.2f}",
                f"{sm['f1']:.3f}",
                f"{sm['precision']:.3f}",
                f"{sm['recall']:.3f}",
                str(sm["forward_steps"]),
                f"{sm['tokens_per_step']:.1f}",
                f"{sm['peak_memory_mb']:.0f}",
                speed,
            ]
        )
    table(rows)


def write_floor(floor: dict | None) -> None:
    if floor is not None:
        write(
            f"floor: the majority value of each attribute in {floor['source']} scores accuracy "
            f"{floor['accuracy']:.3f} on the same {floor['pairs']} pairs"
        )


def write_load(chunks: int, load_start, load_end) -> None:
    write(
        f"chunks: {chunks}; load average (1, 5, 15 min) at start "
        f"{' '.join(f'{x:.2f}' for x in load_start)}, at end {' '.join(f'{x:.2f}' for x in load_end)}"
    )


def write_hpd_checks(best: dict[str, Run], results: dict[str, dict]) -> None:
    """HPD's forward steps against its longest value, and its speed against each bar."""
    if "hpd" not in best:
        return
    h = best["hpd"]
    ok = "ok" if h.max_value_steps <= h.longest_value else "EXCEEDED"
    write(
        f"hpd: forward steps per stacked prompt <= {h.max_value_steps} decode + 1 prefill; longest decoded "
        f"value {h.longest_value} tokens: {ok}; layouts {','.join(sorted(set(h.layouts)))}"
    )
    write_speed_bars(results)


def write_speed_bars(results: dict[str, dict]) -> None:
    """HPD's median per-chunk speedup over each baseline against its bar (SPEED_BAR)."""
    for d, bar in SPEED_BAR.items():
        if d in results and results[d].get("hpd_ratio"):
            ratio = results[d]["hpd_ratio"]["median"]
            write(f"speed bar hpd/{d}: {ratio:.2f}x median (bar {bar}x) {'ok' if ratio >= bar else 'BELOW'}")


def normalized_table(inputs, best: dict[str, Run], results: dict[str, dict]) -> None:
    """--gold normalized: F1 against the normalized gold beside F1 against the extracted gold."""
    types = inputs.types
    write(
        f"gold: normalized ({inputs.normalized_path.name}; numbers {', '.join(sorted(types.numbers))} compared as "
        f"numbers; free text: {', '.join(sorted(types.free)) or 'none'}; enumerations of their category's "
        f"closed list: {', '.join(sorted(types.category_enums and types.enum_names)) or 'none'}); F1 against the extracted gold "
        f"({inputs.extracted_path.name}) on the text as decoded:"
    )
    table(
        [["decoder", "F1 normalized", "F1 extracted"]]
        + [[d, f"{results[d]['f1']:.3f}", f"{results[d]['extracted_gold']['f1']:.3f}"] for d in best]
    )


def results_json(args, ex, inputs, outcome, floor: dict | None) -> dict:
    """The --json document: settings, every decoder's summary, the sweep, per-attribute and
    per-category reports, and the raw calibration points (--calibration-with pools them)."""
    best, timing, types = outcome.best, outcome.timing, inputs.types
    sweep = outcome.sweep
    return {
        "model": ex.model_name,
        "model_revision": ex.model_revision,
        "random_standin": ex.random_standin,
        "extractive": ex.extractive,
        "typed": ex.typed,
        "gold": "normalized" if inputs.normalized else "extracted",
        "numbers": sorted(types.numbers),
        "free_text": sorted(types.free),
        "options": types.source,
        "enumerations": sorted(types.enum_names),
        "na_allowed_in_enumerations": types.na,
        "data": str(args.data),
        "products": len(inputs.products),
        "categories": sorted(ave.by_category(inputs.products)),
        "majority_floor": floor,
        "load_average": {"start": list(outcome.load_start), "end": list(outcome.load_end)},
        "chunks": [{"products": k, "seconds": t} for k, t in zip(timing.sizes, timing.seconds, strict=True)],
        "decoders": outcome.results,
        "sweep": [dict(zip(sweep[0], r, strict=True)) for r in sweep[1:]],
        "per_attribute": {d: r.report.to_dict()["per_attribute"] for d, r in best.items()},
        "per_category": {d: r.report.to_dict()["per_category"] for d, r in best.items()},
        "definitions": DEFINITIONS,
        # raw (confidence, correct) of the values on judged pairs: --calibration-with pools them
        "calibration_points": {d: [[round(c, 6), int(y)] for _, c, y in r.points] for d, r in best.items()},
        "calibration_points_na": {
            d: [[round(c, 6), int(y)] for _, c, y in r.na_points] for d, r in best.items()
        },
    }


def write_json(path: str, document: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=2)
    write(f"wrote {path}")
