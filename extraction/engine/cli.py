"""`python -m extraction <command>`: every subcommand's arguments, declared here and nowhere else.

    evaluate      decoders side by side on an AVE file: quality and speed (engine/evaluate/command.py)
    train         train the extraction model, or fine-tune --base (engine/train/trainer.py)
    precision     float32 / bfloat16 / int8 / compile interleaved, HPD and AR (engine/evaluate/precision.py)
    pool          evaluate --json files of side-by-side runs over disjoint categories, joined (engine/evaluate/pool.py)
    calibrate     fit each decoder's confidence scaling on evaluate --json files, no decoding (engine/evaluate/calibration_fit.py)
    random-model  a random model of a published shape, speed only (engine/evaluate/random_models.py)

Each subcommand's arguments are added by the small functions under its name, in the order --help
shows them; the subcommand's run function receives the parsed namespace.
"""

from __future__ import annotations

import argparse
import sys

from extraction.engine.api import ModelMissing
from extraction.engine.budgets import DEFAULT_BUDGET
from extraction.engine.evaluate.calibration_fit import run_calibrate
from extraction.engine.evaluate.command import DEFAULT_DECODERS, run_evaluate
from extraction.engine.evaluate.pool import run_pool
from extraction.engine.evaluate.precision import PRECISIONS, REFERENCE, run_precision
from extraction.engine.evaluate.random_models import SHAPES
from extraction.engine.splits import DEFAULT_DATA, SPLITS_DIR
from extraction.engine.train import augment as aug
from extraction.engine.train.allocator import run_under_jemalloc
from extraction.engine.train.copy_tokenizer import DEFAULT_VOCAB_SIZE
from extraction.engine.train.row_packing import RowConfig
from extraction.engine.train.starting_model import SIZES
from extraction.engine.train.trainer import DEFAULT_OUT, TrainConfig, run_train


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m extraction")
    sub = parser.add_subparsers(dest="command", required=True)
    add_evaluate_parser(sub)
    add_train_parser(sub)
    add_precision_parser(sub)
    add_pool_parser(sub)
    add_calibrate_parser(sub)
    add_random_model_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. argv None: the command as typed in a shell (sys.argv), where train
    re-executes itself under jemalloc when the system has it (engine/train/allocator.py): it replaces
    the process, so it never happens for a caller that passes argv (the tests)."""
    if argv is None and sys.argv[1:2] == ["train"]:
        run_under_jemalloc()  # faster training with flat memory; returns if jemalloc is absent
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except ModelMissing as exc:  # a command line without a model: say what to run, no traceback
        sys.stderr.write(f"{exc}\n")
        return 2


# ---------------------------------------------------------------------------------- evaluate


def add_evaluate_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("evaluate", help="run decoders on an AVE JSON-lines file, quality and speed")
    evaluate_data_arguments(p)
    evaluate_model_arguments(p)
    evaluate_decoding_arguments(p)
    evaluate_output_arguments(p)
    p.set_defaults(func=run_evaluate)
    return p


def evaluate_data_arguments(p: argparse.ArgumentParser) -> None:
    """What is evaluated: the data file, its types and gold, which products."""
    p.add_argument(
        "--data",
        required=True,
        help="JSON-lines file (oa-mine, ae-110k, wdc-pave format) or an ImplicitAVE .tsv (rows grouped by "
        "id; its attributes are enumerations from the options file of its domain)",
    )
    p.add_argument(
        "--options",
        default=None,
        metavar="FILE",
        help="options JSON (attribute -> allowed values): those attributes decode as enumerations. Default "
        "for an ImplicitAVE .tsv: the options_*.json of the folder above its domain folder that lists "
        "most of its gold values",
    )
    p.add_argument(
        "--gold",
        choices=["extracted", "normalized"],
        default="extracted",
        help="normalized: score WDC-PAVE against its normalized gold (train_normalized.jsonl beside "
        "train.jsonl; either may be --data): numeric attributes decode as numbers in the gold's unit "
        "and compare as numbers, attributes whose normalized gold is rarely a span decode as free text; "
        "prints the F1 against the extracted gold beside it",
    )
    p.add_argument(
        "--typed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="constrain values by their attribute's type (enumerations: one of the allowed values); "
        "--no-typed decodes every attribute as text (the control)",
    )
    p.add_argument(
        "--categories",
        default=None,
        metavar="A,B",
        help="only the products of these categories (comma list; before --limit and --sample): "
        "parallel processes each take a share of the categories, `pool` joins their --json files",
    )
    p.add_argument("--limit", type=int, default=None, help="first N products only")
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        help="N products taken evenly over the file (every category its share; after --limit)",
    )


def evaluate_model_arguments(p: argparse.ArgumentParser) -> None:
    """Which model evaluates, and with which decoders."""
    p.add_argument(
        "--model",
        default=None,
        help="model directory (default: the one `make model` makes; an error if missing)",
    )
    p.add_argument(
        "--random-standin",
        action="store_true",
        help="measure a random Llama of the default's size instead of a model (speed only: its values are "
        "noise; the header and the JSON say so)",
    )
    p.add_argument(
        "--decoders",
        default=DEFAULT_DECODERS,
        help="comma list of ar,ar-honest,pld,fork,hpd (also ar-uncached, ar-honest-static, hpd-dense)",
    )


def evaluate_decoding_arguments(p: argparse.ArgumentParser) -> None:
    """How the decoders run: forced settings (else swept), budgets, device and decoding mode."""
    p.add_argument("--stack", type=int, default=None, help="force HPD stacking J (no sweep over J)")
    p.add_argument("--rows", type=int, default=None, help="force HPD rows per forward")
    p.add_argument("--batch", type=int, default=None, help="force AR / fork batch size (no sweep)")
    p.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help=f"token budget (gap) per attribute (default: the model's slotwise.json, else {DEFAULT_BUDGET})",
    )
    p.add_argument(
        "--chunk",
        type=int,
        default=32,
        help="products per interleaved chunk: every decoder runs on each chunk in turn (A B, B A, ...)",
    )
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument(
        "--dtype", default=None, help="float32 / bfloat16 (default: float32 on cpu, bfloat16 on cuda)"
    )
    p.add_argument("--attn", default="sdpa", help="sdpa or eager")
    p.add_argument("--quantize", default=None, choices=["int8"], help="int8: dynamic int8 quantization (CPU)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument(
        "--sweep-limit",
        type=int,
        default=48,
        help="products the settings sweep runs on, as whole chunks (--chunk) of categories taken evenly "
        "over the file; the best settings then run on every product (0: sweep on every product)",
    )
    p.add_argument(
        "--extractive",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="constrain every value to a substring of its document or n/a (hpd, fork, ar; pld stays "
        "unconstrained). Default: as the model's slotwise.json says (on for the bundled model)",
    )


def evaluate_output_arguments(p: argparse.ArgumentParser) -> None:
    """What is written besides the tables: seen/unseen split, JSON, predictions, calibration."""
    p.add_argument(
        "--train-data",
        default=None,
        metavar="DIR",
        help="data set folder whose training split tells seen from unseen gold values (default: the "
        "dev file's own folder, or the AVE folder of a stored <set>-dev.jsonl split)",
    )
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument(
        "--predictions",
        default=None,
        metavar="JSONL",
        help="write every product's gold and predicted values (best settings of each decoder) here",
    )
    p.add_argument(
        "--fit-calibration",
        action="store_true",
        help="fit one confidence scaling (Platt: slope and bias) per decoder on every evaluated product and write it to "
        'the model directory\'s slotwise.json ("calibration"; other keys kept)',
    )
    p.add_argument(
        "--calibration-with",
        action="append",
        default=[],
        metavar="JSON",
        help="with --fit-calibration: also fit on the confidence points of an earlier --json output of "
        "the same model (another data set); repeatable",
    )


# ---------------------------------------------------------------------------------- train


def add_train_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "train", help="train the extraction model on HPD + AR-JSON (or fine-tune --base)"
    )
    train_model_arguments(p)
    train_rows_arguments(p)
    train_loss_arguments(p)
    p.set_defaults(func=run_train)
    return p


def train_model_arguments(p: argparse.ArgumentParser) -> None:
    """The data, the output, and the model to train (from scratch, --base, LoRA) with its run limits."""
    p.add_argument(
        "--data",
        nargs="+",
        default=[str(DEFAULT_DATA)],
        help="AVE root or data set folders with train.jsonl (default: shared/data/ave)",
    )
    p.add_argument("--out", default=DEFAULT_OUT, help="output model directory")
    p.add_argument(
        "--base", default=None, help="local HF causal LM directory to fine-tune (else train from scratch)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=TrainConfig.steps)
    p.add_argument("--minutes", type=float, default=0.0, help="time cap in minutes (0 = none)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--keep-vocab",
        action="store_true",
        help="--base: do not add <|eov|> (values then end with eos; HPD slot 0 and AR value 0 conflict)",
    )
    p.add_argument(
        "--size", choices=sorted(SIZES), default="small", help="model preset when training from scratch"
    )
    p.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE)
    p.add_argument(
        "--lr", type=float, default=None, help="peak learning rate (default 2e-3 scratch, 5e-5 --base)"
    )
    p.add_argument(
        "--lora",
        type=int,
        default=0,
        metavar="R",
        help="--base: train a LoRA adapter of rank R (peft) instead of every weight; --out then holds "
        "the adapter, which `base_model` merges into the base",
    )
    p.add_argument(
        "--lora-from", type=int, default=0, metavar="L", help="--lora: adapt decoder layers L and up only"
    )
    train_speed_arguments(p)


def train_speed_arguments(p: argparse.ArgumentParser) -> None:
    """Options that make a training step cheaper (measured with tools/bench/train_speed.py)."""
    p.add_argument(
        "--base-dtype",
        choices=["float32", "bfloat16"],
        default=None,
        help="the frozen base's dtype, with the trained parameters and their optimizer state in float32 "
        "(default: float32 on the CPU, bfloat16 on CUDA)",
    )
    p.add_argument(
        "--train-layers",
        type=int,
        default=0,
        metavar="N",
        help="--base with an adapter: train the adapter of the top N decoder layers only; the layers below "
        "run frozen without autograd and a trained token's row learns from the output layer alone "
        "(0 = every adapted layer)",
    )
    p.add_argument(
        "--sparse-token-rows",
        action="store_true",
        help="compute the output layer's trained token rows (<|eov|>) apart from the frozen layer: the "
        "same numbers without copying and differentiating the whole embedding matrix every step",
    )
    p.add_argument(
        "--chunked-loss",
        action="store_true",
        help="with a frozen output layer (LoRA): the output layer and its losses by chunks of tokens, "
        "each chunk's gradient taken at once: the same numbers without holding the [tokens, vocabulary] "
        "logits",
    )
    p.add_argument(
        "--attention",
        choices=["dense", "blocks"],
        default="dense",
        help="the training forward's HPD attention: a dense mask over each row, or by document (each "
        "document against the prefix and itself: the same numbers, no score between two documents)",
    )


def train_rows_arguments(p: argparse.ArgumentParser) -> None:
    """Batches, row packing, copy augmentation and the focus phase."""
    p.add_argument("--batch-tokens", type=int, default=TrainConfig.batch_tokens)
    p.add_argument("--row-tokens", type=int, default=RowConfig.row_tokens)
    p.add_argument("--formats", default="hpd,ar", help="hpd,ar (default), hpd or ar")
    p.add_argument("--no-augment", action="store_true", help="no copy augmentation")
    p.add_argument("--p-augment", type=float, default=aug.AugmentConfig.p_product)
    p.add_argument("--p-attribute", type=float, default=aug.AugmentConfig.p_attribute)
    p.add_argument("--p-mutate", type=float, default=aug.AugmentConfig.p_mutate)
    p.add_argument(
        "--p-phrase",
        type=float,
        default=aug.AugmentConfig.p_phrase,
        help="share of the replacements that are not mutated which are phrases of another title",
    )
    p.add_argument(
        "--keep",
        nargs="*",
        default=[],
        metavar="NAME=SHARE",
        help="draw only this share of a data set's products per epoch (e.g. wdc-pave=0.4: long documents)",
    )
    p.add_argument(
        "--weight",
        nargs="*",
        default=[],
        metavar="NAME=W",
        help="weigh a data set's value losses by W (e.g. amazon-distant=0.5: distant labels are noisy)",
    )
    p.add_argument(
        "--absent-keys",
        type=int,
        default=RowConfig.absent_keys,
        metavar="K",
        help="compact rows: a row's keys are the attributes its products hold a value for plus 1..K of "
        "those said to be absent, drawn per row (0 = every judged attribute)",
    )
    p.add_argument(
        "--focus-steps",
        type=int,
        default=0,
        help="first train this many steps on a few products per schema, HPD format only, no augmentation "
        "(teaches a model from scratch to read values from the document)",
    )
    p.add_argument("--focus-products", type=int, default=16, help="products per schema in the focus phase")


def train_loss_arguments(p: argparse.ArgumentParser) -> None:
    """The extra losses, logging, checkpoints, the dev split and the forward's precision."""
    p.add_argument(
        "--extractive-loss",
        type=float,
        default=1.0,
        metavar="W",
        help="add W x the cross-entropy over only the tokens extractive decoding allows at each value "
        "token (default 1; 0 = off)",
    )
    p.add_argument(
        "--lm-loss",
        type=float,
        default=None,
        metavar="W",
        help="add W x the next-token loss on the documents' own text (default 0.3 from scratch, 0 with "
        "--base: a pretrained model already reads)",
    )
    p.add_argument("--log-every", type=int, default=TrainConfig.log_every)
    p.add_argument(
        "--save-every",
        type=float,
        default=15.0,
        help="save the model to --out every M minutes (0 = end only)",
    )
    p.add_argument(
        "--splits-dir", default=str(SPLITS_DIR), help="where the seeded WDC-PAVE dev split is written/read"
    )
    p.add_argument(
        "--autocast",
        choices=["bf16", "none"],
        default=TrainConfig.autocast,
        help="bf16 autocast for the training forward (float32 master weights) or none",
    )


# ---------------------------------------------------------------------------------- precision


def add_precision_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "precision", help="float32 / bfloat16 / int8 / compile for HPD and AR, interleaved"
    )
    p.add_argument("--data", required=True, help="a dev file (JSONL)")
    p.add_argument("--model", default=None, help="model directory (default: the bundled model)")
    p.add_argument(
        "--precisions", default="float32,bfloat16,int8", help=f"comma list of {','.join(PRECISIONS)}"
    )
    p.add_argument(
        "--base", default=REFERENCE, help="the reference precision: F1 and speed are given against it"
    )
    p.add_argument("--decoders", default="hpd,ar", help="comma list of hpd,ar,ar-honest")
    p.add_argument("--sample", type=int, default=None, help="N products spread over the file (default all)")
    p.add_argument("--chunk", type=int, default=16, help="products per chunk (one extract call)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.set_defaults(func=run_precision)
    return p


# ---------------------------------------------------------------------------------- pool


def add_pool_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "pool", help="join the --json files of evaluate runs made side by side over disjoint categories"
    )
    p.add_argument("files", nargs="+", metavar="JSON", help="evaluate --json files (one per process)")
    p.add_argument("--json", default=None, help="write the pooled figures here")
    p.set_defaults(func=run_pool)
    return p


# ---------------------------------------------------------------------------------- calibrate


def add_calibrate_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "calibrate",
        help="fit each decoder's confidence scaling on evaluate --json files (no decoding) into slotwise.json",
    )
    p.add_argument(
        "outputs",
        nargs="+",
        metavar="JSON",
        help="evaluate --json files of this model (their raw confidences)",
    )
    p.add_argument("--model", default=None, help="model directory to write (default: the bundled model)")
    p.set_defaults(func=run_calibrate)
    return p


# ---------------------------------------------------------------------------------- random-model


def add_random_model_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("random-model", help="write a randomly initialised model of a published shape")
    p.add_argument("--shape", required=True, choices=sorted(SHAPES))
    p.add_argument("--tokenizer", required=True, help="a model directory whose tokenizer it takes")
    p.add_argument("--out", required=True, help="the model directory to write")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run_random_model)
    return p


def run_random_model(args: argparse.Namespace) -> int:
    import pathlib

    from extraction.engine.evaluate.random_models import write_random_model

    out = write_random_model(args.shape, pathlib.Path(args.tokenizer), pathlib.Path(args.out), args.seed)
    sys.stdout.write(f"{out}: a random {args.shape} (speed only: its values are noise)\n")
    return 0
