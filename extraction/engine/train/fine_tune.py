"""Fine-tune an adapter on a catalog's reviewed gold, mixed with public data so it does not forget.

What the product's training job runs (runner/training/job.py), with the engine's own trainer and
the recipe of the shipped model's last stage (models/slotwise-gemma3/training.json: the adapter
trained further, HPD and AR-JSON rows, copy augmentation, the extractive loss) at a third of its
peak lr (RECIPE_LR), for a bounded time instead of a step count. Pure engine: it is handed its
records, folders and settings.

    result = fine_tune(FineTune(start=..., out=..., reviewed=records, public=[...]), hooks, save)

A checkpoint is the adapter directory as it stands (`save(step)` every `save_every` minutes); a
job resumed from one starts from that adapter with LoopHooks.start_step / spent_seconds, so its
schedule and time cap go on where they were (the optimizer's moments start afresh).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from extraction.engine.base_model import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    REPO_ROOT,
    adapted_model,
    save_bfloat16,
)
from extraction.engine.splits import OPTIONS, Split, document_key, load_split
from extraction.engine.train import augment as aug
from extraction.engine.train.corpus import corpus_of
from extraction.engine.train.row_packing import RowConfig, RowSampler
from extraction.engine.train.trainer import LoopHooks, TrainConfig, train_loop
from extraction.engine.train.trainer import saver as checkpoint_saver

REVIEWED = "reviewed"  # the data set name of the catalog's reviewed gold in the corpus
# A job's peak learning rate: a third of the shipped model's last stage (3e-4, training.json). A job
# makes a few steps with fresh AdamW moments, whose first updates are about lr per weight whatever
# the gradient's size; at 3e-4 six minutes on 106 reviewed WDC-PAVE dev products (5 steps) took
# the other 107 products' F1 from 0.748 to 0.724, at 1e-4 (6 steps) to 0.763 (issue #48's recipe
# table; the same at 27 steps of 1,024 tokens: 0.762).
RECIPE_LR = 1e-4
RECIPE_WARMUP = 5  # steps: a job of minutes makes tens of steps, not the command's hundreds
# slotwise.json keys the new version does not inherit: its label names the parent's figures
NOT_INHERITED = ("label",)


@dataclass
class FineTune:
    """One fine-tuning: from the adapter `start` into `out`, on `reviewed` (AVE records) and a share
    of the `public` data set folders (their train splits: public products per reviewed product)."""

    start: Path
    out: Path
    reviewed: list[dict]
    public: list[Path] = field(default_factory=list)
    public_ratio: float = 1.0
    minutes: float = 15.0
    max_steps: int = 100_000
    batch_tokens: int = 4096
    lr: float = RECIPE_LR
    seed: int = 0
    device: str = "cpu"
    save_every: float = 2.0  # minutes between checkpoints (0: none)
    # document texts never trained on (the held-back products): left out of the public data too
    excluded: frozenset[str] = frozenset()


def public_shares(reviewed: int, public: list[Split], ratio: float) -> dict[str, float]:
    """data set -> share of its train products drawn per epoch, so that about `ratio` public
    products come per reviewed product, spread over the data sets by their size."""
    total = sum(len(s.train) for s in public)
    if total == 0:
        return {}
    share = min(1.0, ratio * max(reviewed, 1) / total)
    return {s.name: share for s in public}


def public_splits(folders: list[Path], excluded: frozenset[str]) -> list[Split]:
    """The train records of each public data set, less any document in `excluded`. Their dev sets
    are dropped: a catalog made of a public dev file (the learning curve's) must still train on its
    reviewed products, which the corpus would otherwise leave out as dev documents."""
    out = []
    for folder in folders:
        split = load_split(folder, write=False)
        out.append(Split(split.name, [r for r in split.train if document_key(r) not in excluded], []))
    return out


def inherited_settings(start: Path) -> dict:
    """The start model's slotwise.json (budgets, extractive decoding, boundary rules, calibration,
    CPU dtype) less what names the parent alone: the new version decodes under the same rules."""
    stored = json.loads((start / "slotwise.json").read_text()) if (start / "slotwise.json").is_file() else {}
    return {k: v for k, v in stored.items() if k not in NOT_INHERITED}


def portable_adapter(out: Path) -> None:
    """The adapter's recorded base relative to the repository (as the shipped artifact records it),
    so any worker that ran `make model` finds it; and its weights in bfloat16, as publish stores them
    (half the bytes in PostgreSQL; the weights train and merge in float32 all the same)."""
    config = json.loads((out / ADAPTER_CONFIG).read_text())
    base = Path(config.get("base_model_name_or_path") or "")
    if base.is_absolute() and base.is_relative_to(REPO_ROOT):
        config["base_model_name_or_path"] = str(base.relative_to(REPO_ROOT))
        (out / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_bfloat16(out / ADAPTER_WEIGHTS, out / ADAPTER_WEIGHTS)


def saver(model, tokenizer, out: Path, settings: dict):
    """save(step): the trainer's checkpoint (adapter, tokenizer, slotwise.json) into out, made portable."""
    save_checkpoint = checkpoint_saver(model, tokenizer, out, settings)

    def save(step: int) -> None:
        out.mkdir(parents=True, exist_ok=True)
        save_checkpoint(step)
        portable_adapter(out)

    return save


def as_prompted(records: list[dict], settings: dict) -> list[dict]:
    """The reviewed records as the start model's runs prompt them: an enumeration's options stay (it
    trains as an enumeration, its values listed in its prompt line) where the model lists them
    (slotwise.json "enum_values_in_prompt"); for one that does not, they go, so that no training
    row shows a prompt line its decoding never writes."""
    if settings.get("enum_values_in_prompt"):
        return list(records)
    return [{k: v for k, v in r.items() if k != OPTIONS} for r in records]


def autocast_for(device: str) -> str:
    """bf16 autocast where bfloat16 is computed in hardware (CUDA, AVX-512 BF16 or AMX CPUs); plain
    float32 elsewhere, where oneDNN emulates bfloat16 several times slower (the shipped model's later
    stages trained with --autocast none on this AVX2 host for that reason)."""
    from extraction.engine.modeling import native_cpu_bfloat16

    return "bf16" if device.startswith("cuda") or native_cpu_bfloat16() else "none"


def fine_tune(job: FineTune, hooks: LoopHooks | None = None, on_save=None) -> dict:
    """Train the start adapter further; the adapter, slotwise.json and training.json end in job.out.
    on_save(out, step): called after each checkpoint is written (the job stores it elsewhere)."""
    import torch

    torch.manual_seed(job.seed)
    public = public_splits(job.public, job.excluded)
    settings = inherited_settings(job.start)
    corpus = corpus_of([Split(REVIEWED, as_prompted(job.reviewed, settings), []), *public])
    model, tokenizer = adapted_model(job.start, dtype=torch.float32, trainable=True)
    model.to(job.device)
    row_cfg = RowConfig(
        row_tokens=min(RowConfig.row_tokens, job.batch_tokens),  # a tiny job (tests) packs short rows
        keep=public_shares(len(job.reviewed), public, job.public_ratio),
        choices=True,
    )
    sampler = RowSampler(corpus, tokenizer, row_cfg, aug.AugmentConfig(), job.seed)
    cfg = TrainConfig(
        seed=job.seed,
        steps=job.max_steps,
        minutes=job.minutes,
        lr=job.lr,
        warmup=RECIPE_WARMUP,
        batch_tokens=job.batch_tokens,
        log_every=5,
        extractive_weight=1.0,
        autocast=autocast_for(job.device),
        # the same numbers at less cost (each has its equality test): on the AVX2 host 1.15x the
        # tokens/s and 11 GiB of peak memory instead of 18 (tools/bench/train_speed, issue #46)
        sparse_token_rows=True,
        attention="blocks",
        chunked_loss=True,
    )
    write = saver(model, tokenizer, job.out, settings)

    def save(step: int) -> None:
        write(step)
        if on_save is not None:
            on_save(job.out, step)

    result = train_loop(model, sampler, tokenizer.pad_token_id, cfg, job.device, save, job.save_every, hooks)
    model.to("cpu")
    write(result["steps"])
    meta = {"start": str(job.start), "train": asdict(cfg), "rows": asdict(row_cfg), **result}
    meta["data"] = {"reviewed_products": len(job.reviewed), "public_shares": row_cfg.keep}
    (job.out / "training.json").write_text(json.dumps(meta, indent=2) + "\n")
    return result
