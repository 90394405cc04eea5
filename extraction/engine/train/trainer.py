"""Train the bundled extraction model, or fine-tune any local causal LM, on HPD and AR-JSON at once.

    python -m extraction train --data ../shared/data/ave --out models/slotwise-ave [--base DIR]
        [--seed 0] [--steps N] [--minutes M] [--device cpu|cuda] [--size small]

Progress for the learning-rate schedule is max(step / steps, elapsed / minutes): with --minutes as
a safety cap a slow machine still ends on a decayed rate; the run is reproducible (seeded) when
the step budget is what ends it.

The steps, one module each: training_corpus.py (products by schema, the model's slotwise.json),
training_rows.py (rows of HPD and AR-JSON documents packed per schema, batches), training_model.py (the model to start from),
training_losses.py (the forward and its losses); this module is the loop and the train command
(its arguments: extraction/engine/cli.py).
"""

from __future__ import annotations

import json
import logging
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from extraction.engine.modeling import check_servable, cut_window
from extraction.engine.train import augment as aug
from extraction.engine.train.allocator import limit_fragmentation
from extraction.engine.train.corpus import Corpus, focus_subset, load_corpus, model_settings
from extraction.engine.train.losses import LossLog, step_losses
from extraction.engine.train.phases import phase
from extraction.engine.train.row_packing import Row, RowConfig, RowSampler, collate
from extraction.engine.train.starting_model import base_dtype, starting_model

log = logging.getLogger("extraction.train")

DEFAULT_OUT = str(Path(__file__).resolve().parents[2] / "models" / "slotwise-ave")


@dataclass
class TrainConfig:
    seed: int = 0
    steps: int = 2000
    minutes: float = 0.0  # 0 = no time cap
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.1
    batch_tokens: int = 4096
    clip: float = 1.0
    log_every: int = 25
    autocast: str = "bf16"  # "bf16": bfloat16 autocast (weights stay float32), "none": plain float32
    extractive_weight: float = 0.0  # weight of the extractive loss (0 = off; needs RowConfig.choices)
    lm_weight: float = 0.0  # weight of the language-model loss on the documents' text (0 = off)
    sparse_token_rows: bool = False  # the output layer's trained token rows apart (losses.output_logits)
    attention: str = "dense"  # the training forward's attention: "dense" mask or document "blocks"
    chunked_loss: bool = False  # the output layer and its losses by chunks of tokens (head_loss.py)


@dataclass
class LoopHooks:
    """What a caller of train_loop may add (the product's training job, engine/train/fine_tune.py): carry
    on where a checkpoint left off (its step and the training seconds already spent, so the schedule
    and the time cap go on from there), hear of every step, and stop between steps."""

    start_step: int = 0
    spent_seconds: float = 0.0
    on_step: Callable[[int, float, float], None] | None = None  # (step, loss, elapsed seconds)
    should_stop: Callable[[], bool] | None = None


# ---------------------------------------------------------------------------------- training loop


# A run warms up over at most this share of its schedule's progress, whatever its step count.
WARMUP_SHARE = 0.1


def lr_at(cfg: TrainConfig, progress: float, step: int) -> float:
    """Linear warmup, then a cosine on progress down to min_lr_ratio. The warmup ends after
    cfg.warmup steps or a tenth of the progress, whichever comes first: a run its time cap stops
    long before its step count (budget stages 4 and 5 made 47 and 30 of 260 steps, with a 26-step
    warmup) otherwise never reaches its peak, the cosine decaying while it still warms up."""
    warm = min(1.0, max((step + 1) / max(1, cfg.warmup), progress / WARMUP_SHARE))
    cos = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
    return cfg.lr * warm * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * cos)


def progress_at(cfg: TrainConfig, step: int, elapsed: float) -> float | None:
    """The schedule's progress (module docstring), or None once the time cap is reached."""
    progress = step / cfg.steps
    if cfg.minutes > 0:
        if elapsed >= cfg.minutes * 60:
            return None
        progress = max(progress, elapsed / (cfg.minutes * 60))
    return progress


def collate_for(rows: list[Row], pad_id: int, model, cfg: TrainConfig) -> dict[str, torch.Tensor]:
    """collate, with the extractive choices when the extractive loss is on. A sliding-window model
    whose sliding layers the training forward masks to the window (modeling.cut_window) trains
    on any row; another one only on rows whose every position lies inside its window (positions
    restart per document, so that is each document's span, not the row's length): there the HPD
    mask is exactly the model's own, beyond it the batch is refused (modeling.check_servable)."""
    vocab = model.get_output_embeddings().weight.shape[0] if cfg.extractive_weight > 0 else None
    batch = collate(rows, pad_id, vocab, sparse_choices=cfg.chunked_loss)
    config = getattr(model, "get_base_model", lambda: model)().config
    if cut_window(config) is None:
        check_servable(config, span=int(batch["position_ids"].max()) + 1)
    return batch


def optimizer(model, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on the matrices only (not on norms and biases)."""
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and p.requires_grad]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 and p.requires_grad]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.95),
    )


def train_step(model, opt, rows: list[Row], pad_id: int, cfg: TrainConfig, device: str):
    """One optimizer step on a batch of rows -> (the loss terms, the loss descended)."""
    with phase("data: collate"):
        batch = collate_for(rows, pad_id, model, cfg)
    terms, loss = step_losses(model, batch, cfg, device)
    opt.zero_grad(set_to_none=True)
    with phase("backward"):
        loss.backward()
    with phase("optimizer"):
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], cfg.clip)
        opt.step()
    return terms, loss


def train_loop(
    model,
    sampler: RowSampler,
    pad_id: int,
    cfg: TrainConfig,
    device: str,
    save=None,
    save_every: float = 0.0,
    hooks: LoopHooks | None = None,
) -> dict:
    """AdamW, warmup + cosine on progress; save(step) is called every save_every minutes."""
    hooks = hooks or LoopHooks()
    torch.manual_seed(cfg.seed + hooks.start_step)
    opt = optimizer(model, cfg)
    model.train()
    start = time.time() - hooks.spent_seconds
    stream = sampler.batches(cfg.batch_tokens)
    step, tokens, losses, stopped = hooks.start_step, 0, LossLog(), False
    last_save = time.time()
    while step < cfg.steps:
        if hooks.should_stop is not None and hooks.should_stop():
            stopped = True
            break
        elapsed = time.time() - start
        progress = progress_at(cfg, step, elapsed)
        if progress is None:
            log.info("time cap of %.1f min reached at step %d", cfg.minutes, step)
            break
        lr = lr_at(cfg, progress, step)
        for group in opt.param_groups:
            group["lr"] = lr
        with phase("data: row packing"):
            rows = next(stream)
        terms, loss = train_step(model, opt, rows, pad_id, cfg, device)
        step += 1
        tokens += sum(len(r.input_ids) for r in rows)
        losses.add(terms)
        if hooks.on_step is not None:
            hooks.on_step(step, float(loss.detach()), time.time() - start)
        if step % cfg.log_every == 0 or step == cfg.steps:
            losses.flush(step, cfg.steps, lr, elapsed, sampler.epoch, tokens)
        if save is not None and save_every > 0 and time.time() - last_save >= save_every * 60:
            model.eval()
            save(step)
            model.train()
            last_save = time.time()
    model.eval()
    seconds = round(time.time() - start, 1)
    return {
        "steps": step,
        "tokens": tokens,
        "seconds": seconds,
        "epochs": sampler.epoch,
        "history": losses.history,
        "stopped": stopped,
    }


# ---------------------------------------------------------------------------------- the train command


def lm_weight(args) -> float:
    """--lm-loss, else 0.3 for a model trained from scratch (it must learn to read product text;
    +8 points of HPD F1 on OA-Mine and WDC-PAVE in a 13-minute probe) and 0 for --base."""
    if args.lm_loss is not None:
        return args.lm_loss
    return 0.0 if args.base else 0.3


def phase_config(args, lr: float, steps: int, minutes: float, warmup: int) -> TrainConfig:
    """The optimiser settings of one training phase (focus or main) from the command line."""
    return TrainConfig(
        seed=args.seed,
        steps=steps,
        minutes=minutes,
        lr=lr,
        batch_tokens=args.batch_tokens,
        log_every=args.log_every,
        autocast=args.autocast,
        warmup=min(TrainConfig.warmup, max(1, warmup)),
        extractive_weight=args.extractive_loss,
        lm_weight=lm_weight(args),
        sparse_token_rows=args.sparse_token_rows,
        attention=args.attention,
        chunked_loss=args.chunked_loss,
    )


def named_numbers(items: list[str], flag: str = "--keep", example: str = "wdc-pave=0.4") -> dict[str, float]:
    """--keep NAME=SHARE ... (or --weight NAME=W ...) -> data set -> its number."""
    out = {}
    for item in items:
        name, _, number = item.partition("=")
        try:
            out[name] = float(number)
        except ValueError:
            raise SystemExit(f"{flag} {item!r}: expected NAME=NUMBER, e.g. {example}") from None
    return out


def keep_shares(items: list[str]) -> dict[str, float]:
    """--keep NAME=SHARE ... -> data set -> share of its products drawn per epoch."""
    return named_numbers(items)


def augment_config(args) -> aug.AugmentConfig | None:
    if args.no_augment:
        return None
    return aug.AugmentConfig(
        p_product=args.p_augment, p_attribute=args.p_attribute, p_mutate=args.p_mutate, p_phrase=args.p_phrase
    )


def formats_of(args) -> tuple[set[str], float]:
    """--formats -> (the formats, the share of a row's products that go to its HPD part)."""
    formats = {f.strip() for f in args.formats.split(",") if f.strip()}
    return formats, 1.0 if formats == {"hpd"} else 0.0 if formats == {"ar"} else 0.5


def saver(model, tokenizer, out: Path, settings: dict):
    """save(step): the model (or its adapter alone), tokenizer and slotwise.json into out."""

    def save(step: int) -> None:
        if hasattr(model, "peft_config"):
            # the adapter alone: the embedding rows it adds are trained tokens, saved as deltas
            model.save_pretrained(str(out), safe_serialization=True, save_embedding_layers=False)
        else:
            model.save_pretrained(str(out), safe_serialization=True)
        tokenizer.save_pretrained(str(out))
        (out / "slotwise.json").write_text(json.dumps(settings, indent=1, ensure_ascii=False) + "\n")
        log.info("checkpoint at step %d saved to %s", step, out)

    return save


def focus_phase(args, model, tokenizer, corpus: Corpus, lr: float) -> dict | None:
    """The focus phase before the main one (--focus-steps), or None without it.

    A from-scratch model first learns each attribute's usual values and only much later to read
    them from the document; a few products seen many times, in the HPD format alone and
    unaugmented, push it to read the document sooner (one seed on 48 shoe titles: it read the
    gender of unseen titles after 120 such steps, not with AR-JSON or augmentation mixed in)."""
    if args.focus_steps <= 0:
        return None
    focus_corpus = focus_subset(corpus, args.focus_products, args.seed)
    row_cfg = RowConfig(row_tokens=args.row_tokens, p_hpd=1.0, choices=args.extractive_loss > 0)
    sampler = RowSampler(focus_corpus, tokenizer, row_cfg, None, args.seed)
    cfg = phase_config(args, lr, args.focus_steps, 0.0, warmup=args.focus_steps // 5)
    log.info(
        "focus phase: %d products, HPD only, no augmentation, %d steps", focus_corpus.size, args.focus_steps
    )
    return train_loop(model, sampler, tokenizer.pad_token_id, cfg, args.device)


def focus_meta(args, focus: dict | None) -> dict | None:
    if focus is None:
        return None
    keys = ("steps", "seconds", "tokens")
    return {"products_per_schema": args.focus_products, **{k: focus[k] for k in keys}}


def log_corpus(corpus: Corpus) -> None:
    dev = {k: len(v) for k, v in corpus.dev.items()}
    log.info("training products: %d in %d schemas; dev: %s", corpus.size, len(corpus.groups), dev)


def log_model(model) -> tuple[int, int]:
    """-> (parameters, trained parameters), logged."""
    n_params = sum(p.numel() for p in model.parameters())
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    name = type(model).__name__
    log.info("model: %s, %.2fM parameters, %.2fM trained", name, n_params / 1e6, n_trainable / 1e6)
    return n_params, n_trainable


@dataclass
class PreparedRun:
    """The main phase of the train command before its first step: model, rows and settings."""

    model: torch.nn.Module
    tokenizer: object
    lr: float
    row_cfg: RowConfig
    aug_cfg: aug.AugmentConfig | None
    sampler: RowSampler
    cfg: TrainConfig


def prepare_run(args, corpus: Corpus) -> PreparedRun:
    """The train command's model (on --device), row sampler and settings for its arguments; the
    training speed bench (tools/bench/train_speed.py) prepares its recipes with it too."""
    model, tokenizer, lr = starting_model(args, corpus)
    model.to(args.device)
    _, p_hpd = formats_of(args)
    row_cfg = RowConfig(
        row_tokens=args.row_tokens,
        p_hpd=p_hpd,
        keep=keep_shares(args.keep),
        weights=named_numbers(args.weight, "--weight", "amazon-distant=0.5"),
        absent_keys=args.absent_keys,
        choices=args.extractive_loss > 0,
    )
    aug_cfg = augment_config(args)
    sampler = RowSampler(corpus, tokenizer, row_cfg, aug_cfg, args.seed)
    cfg = phase_config(args, lr, args.steps, args.minutes, warmup=args.steps // 10)
    return PreparedRun(model, tokenizer, lr, row_cfg, aug_cfg, sampler, cfg)


def run_train(args) -> int:
    """The train command (arguments: extraction/engine/cli.py): corpus, model, focus and main phases;
    the model, slotwise.json and training.json written to --out."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    torch.set_num_threads(args.threads)
    limit_fragmentation()  # resident memory stays flat across batches of changing shape
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    corpus = load_corpus(args.data, Path(args.splits_dir))
    log_corpus(corpus)
    run = prepare_run(args, corpus)
    model, tokenizer = run.model, run.tokenizer
    n_params, n_trainable = log_model(model)
    formats, _ = formats_of(args)
    save = saver(model, tokenizer, out, model_settings(corpus, tokenizer))
    focus = focus_phase(args, model, tokenizer, corpus, run.lr)
    result = train_loop(
        model, run.sampler, tokenizer.pad_token_id, run.cfg, args.device, save, args.save_every
    )
    model.to("cpu")
    save(result["steps"])
    meta = {
        "command": "python -m extraction train " + " ".join(a for a in sys.argv[1:] if a != "train"),
        "base": args.base,
        "size": None if args.base else args.size,
        "parameters": n_params,
        "trained_parameters": n_trainable,
        "lora": {"rank": args.lora, "from_layer": args.lora_from} if args.lora else None,
        # what the base ran in: a bfloat16 asked for on a CPU without it runs in float32
        "base_dtype": args.base_dtype and str(base_dtype(args)).removeprefix("torch."),
        "train_layers": args.train_layers,
        "formats": sorted(formats),
        "augment": None if run.aug_cfg is None else asdict(run.aug_cfg),
        "rows": asdict(run.row_cfg),
        "train": asdict(run.cfg),
        "threads": args.threads,
        "device": args.device,
        "data": {name: {"dev": len(dev)} for name, dev in corpus.dev.items()},
        "train_products": corpus.size,
        "focus": focus_meta(args, focus),
        **result,
    }
    (out / "training.json").write_text(json.dumps(meta, indent=2) + "\n")
    log.info("saved %s (%d steps, %.1f min)", out, result["steps"], result["seconds"] / 60)
    return 0
