"""`python -m extraction pool`: the --json files of evaluate runs made side by side over disjoint
categories (`evaluate --categories`, one process each), joined into one table.

Why: a decoder that multiplies a few rows at a time (AR-JSON, prompt lookup, fork) gains little
from a second CPU thread, so on a 2-core machine two one-thread processes, each over half of the
categories, keep both cores busy for every decoder and finish a dev set in about half the time.
Each process still interleaves its decoders chunk by chunk, and the other process's load lands on
all of them alike.

What is pooled:
- quality: the outcome counts of every category summed (metric.Counts), so micro P / R / F1 and the
  n/a figures are those of one run over every product;
- speed: every chunk of every file (decoder_runs.Interleaved): a decoder's products/s is the median
  over them, HPD's speedup over another decoder the median and min-max of its per-chunk ratios.

Files that cannot be pooled are refused with the reason: another model or decoding mode, other
decoders, or a category in two files (its products would count twice).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from extraction.engine.evaluate.decoder_runs import Interleaved
from extraction.engine.evaluate.report import fmt, ratio_summary, table, write, write_json, write_speed_bars
from extraction.engine.evaluate.seen_values import SeenSplit
from extraction.engine.metric import Counts

SAME = ("model_revision", "extractive", "typed", "gold")  # what every pooled file must share


class PoolError(ValueError):
    """Files that cannot be pooled: the message says which and why."""


def read(paths: list[str]) -> list[dict]:
    docs = []
    for p in paths:
        try:
            docs.append(json.loads(pathlib.Path(p).read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as exc:
            raise PoolError(f"{p}: not an evaluate --json file ({exc})") from exc
        if "chunks" not in docs[-1] or "per_category" not in docs[-1]:
            raise PoolError(f"{p}: not an evaluate --json file (no chunks or per_category)")
    return docs


def check(paths: list[str], docs: list[dict]) -> list[str]:
    """The decoders every file has (in the first file's order); PoolError when they cannot be pooled."""
    first = docs[0]
    for p, d in zip(paths[1:], docs[1:], strict=True):
        for key in SAME:
            if d.get(key) != first.get(key):
                raise PoolError(f"{p}: {key} is {d.get(key)!r}, {paths[0]} has {first.get(key)!r}")
        if list(d["decoders"]) != list(first["decoders"]):
            raise PoolError(f"{p}: decoders {list(d['decoders'])}, {paths[0]} has {list(first['decoders'])}")
    seen: dict[str, str] = {}
    for p, d in zip(paths, docs, strict=True):
        for cat in categories(d):
            if cat in seen:
                raise PoolError(
                    f"category {cat!r} is in {seen[cat]} and in {p}: its products would count twice"
                )
            seen[cat] = p
    return list(first["decoders"])


def categories(doc: dict) -> list[str]:
    """The categories a file evaluated (older files: those its first decoder has counts for)."""
    if "categories" in doc:
        return doc["categories"]
    return sorted(next(iter(doc["per_category"].values()), {}))


def counts(docs: list[dict], decoder: str) -> Counts:
    """The outcome counts of every category of every file, summed."""
    return Counts.summed(c for d in docs for c in d["per_category"][decoder].values())


def seen(docs: list[dict], decoder: str) -> SeenSplit | None:
    """Gold values seen / never seen in training, summed; None unless every file has them."""
    splits = [d["decoders"][decoder].get("seen_values") for d in docs]
    return SeenSplit.summed(splits) if all(splits) else None


def products(docs: list[dict]) -> int:
    return sum(d["products"] for d in docs)


def timing(docs: list[dict]) -> Interleaved:
    """Every chunk of every file, in file order."""
    out = Interleaved()
    for d in docs:
        for chunk in d["chunks"]:
            out.sizes.append(chunk["products"])
            out.seconds.append(chunk["seconds"])
    return out


def pool(docs: list[dict], decoders: list[str]) -> dict:
    """decoder -> pooled figures (settings per file, products, P / R / F1, n/a, speed, HPD's ratio)."""
    t = timing(docs)
    out = {}
    for dec in decoders:
        c = counts(docs, dec)
        out[dec] = {
            "settings": [d["decoders"][dec]["settings"] for d in docs],
            "products": products(docs),
            **c.to_dict(),
            "median_products_per_second": t.median_products_per_second(dec),
        }
        split = seen(docs, dec)
        if split is not None:
            out[dec]["seen_values"] = split.to_dict()
        if "hpd" in decoders and dec != "hpd":
            out[dec]["hpd_ratio"] = ratio_summary(t.ratios("hpd", dec))
    return out


def report(paths: list[str], docs: list[dict], pooled: dict) -> None:
    n_chunks = sum(len(d["chunks"]) for d in docs)
    write(f"pooled: {len(docs)} files, {products(docs)} products, {n_chunks} chunks")
    for p, d in zip(paths, docs, strict=True):
        load = d.get("load_average", {})
        start, end = (" ".join(f"{x:.2f}" for x in load.get(k, [])) for k in ("start", "end"))
        write(f"  {p}: {d['products']} products, {', '.join(categories(d))}; load {start} -> {end}")
    head = ["decoder", "settings", "products/s", "F1", "P", "R", "NV", "n/a acc", "unseen acc"]
    rows = [head + ["hpd speedup (min-max, chunks)"]]
    for dec, sm in pooled.items():
        r = sm.get("hpd_ratio")
        speed = f"{r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f}, {r['pairs']})" if r else "-"
        rows.append(
            [
                dec,
                " | ".join(dict.fromkeys(sm["settings"])),
                f"{sm['median_products_per_second']:.2f}",
                f"{sm['f1']:.3f}",
                f"{sm['precision']:.3f}",
                f"{sm['recall']:.3f}",
                str(sm["NV"]),
                fmt(sm["na_accuracy"]),
                fmt(sm.get("seen_values", {}).get("unseen_accuracy")),
                speed,
            ]
        )
    table(rows)
    write_speed_bars(pooled)


def run_pool(args: argparse.Namespace) -> int:
    """The pool command (arguments: extraction/engine/cli.py); 2 when the files cannot be pooled."""
    try:
        docs = read(args.files)
        decoders = check(args.files, docs)
    except PoolError as exc:
        sys.stderr.write(f"pool: {exc}\n")
        return 2
    pooled = pool(docs, decoders)
    report(args.files, docs, pooled)
    if args.json:
        write_json(args.json, {"files": args.files, "products": products(docs), "decoders": pooled})
    return 0
