"""The model a training run starts from: a new Llama of a preset size with its own tokenizer
(training from scratch), a local HF causal LM (fine-tuning --base, optionally through a peft LoRA
adapter), or an adapter directory trained further over its own base."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from extraction.engine.base_model import adapted_model, is_adapter
from extraction.engine.modeling import DTYPES, cpu_dtype
from extraction.engine.train.copy_tokenizer import build_tokenizer
from extraction.engine.train.corpus import Corpus, tokenizer_texts
from extraction.engine.train.losses import causal_lm

log = logging.getLogger("extraction.train")

# model presets for training from scratch (Llama: a standard HF architecture the engine serves)
SIZES = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2),
    "small": dict(hidden_size=256, intermediate_size=768, num_hidden_layers=6, num_attention_heads=4),
    "medium": dict(hidden_size=320, intermediate_size=960, num_hidden_layers=8, num_attention_heads=5),
}
SCRATCH_LR = 2e-3  # peak learning rate of a model trained from scratch (--lr overrides)
BASE_LR = 5e-5  # of a pretrained --base, adapter or not (--lr overrides)


LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def with_lora(model, new_ids: list[int], rank: int, first_layer: int = 0):
    """Wrap model in a peft LoRA adapter of this rank on every linear layer of the decoder layers
    from first_layer up. new_ids (tokens added to the base's vocabulary: ``<|eov|>``) are trained
    as rows of the tied embedding (peft's trainable tokens), so the artifact holds those rows and
    not the whole matrix."""
    from peft import LoraConfig, get_peft_model

    layers = list(range(first_layer, model.config.num_hidden_layers))
    config = LoraConfig(
        r=rank,
        lora_alpha=2 * rank,
        lora_dropout=0.0,
        target_modules=list(LORA_TARGETS),
        layers_to_transform=layers,
        trainable_token_indices={"embed_tokens": new_ids} if new_ids else None,
        ensure_weight_tying=True,  # one trained row serves the tied input and output embedding
    )
    return get_peft_model(model, config)


def new_model(tokenizer, size: str, seed: int, max_positions: int = 4096):
    from transformers import LlamaConfig, LlamaForCausalLM

    kw = dict(SIZES[size])
    kw["num_key_value_heads"] = kw["num_attention_heads"]
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        **kw,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def load_base(base: str, dtype: torch.dtype, add_value_end: bool = True):
    """A local HF causal LM and its tokenizer. With add_value_end, ``<|eov|>`` (layout.VALUE_END)
    joins the vocabulary (embeddings resized): values then end with it in HPD and AR-JSON alike, so
    HPD slot 0 and AR value 0, which see the same context, are trained on the same target."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from extraction.engine.base_model import resize_embeddings
    from extraction.engine.layout import VALUE_END
    from extraction.engine.modeling import check_servable

    tokenizer = AutoTokenizer.from_pretrained(base)
    if tokenizer.eos_token_id is None:
        raise SystemExit(f"{base}: the tokenizer has no eos token (the HPD terminator)")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype, attn_implementation="sdpa")
    # everything but the window here; each batch's real span is checked as it is built (train.collate_for)
    check_servable(model.config, span=getattr(model.config, "sliding_window", None))
    if add_value_end and VALUE_END not in tokenizer.get_vocab():
        tokenizer.add_special_tokens({"additional_special_tokens": [VALUE_END]})
        resize_embeddings(model, len(tokenizer))
        log.info("added %s to the tokenizer (id %d)", VALUE_END, tokenizer.convert_tokens_to_ids(VALUE_END))
    return model, tokenizer


def base_dtype(args) -> torch.dtype:
    """The frozen base's dtype: --base-dtype, else bfloat16 on CUDA and float32 on the CPU. On a CPU
    without native bfloat16 (AVX2 only) a bfloat16 base trains in float32 (logged), as decoding
    does: oneDNN emulates bfloat16 there, and its matmuls ran about 190 times slower than float32's
    (0.5 against 93.5 GFLOP/s on a 2-core AVX2 EPYC)."""
    if getattr(args, "base_dtype", None):
        on_cuda = args.device.startswith("cuda")
        return DTYPES[args.base_dtype if on_cuda else cpu_dtype(args.base_dtype)]
    return torch.bfloat16 if args.device.startswith("cuda") else torch.float32


def trained_in_float32(model) -> None:
    """The trained parameters (adapter, trained token rows) in float32 over a lower-precision frozen
    base: their updates, a learning rate times a small gradient, would mostly round away in
    bfloat16, and AdamW keeps its moments in its parameters' dtype."""
    for p in model.parameters():
        if p.requires_grad and p.dtype != torch.float32:
            p.data = p.data.float()


def train_top_layers(model, n: int) -> None:
    """Train the adapter on the top n decoder layers only (all where n is 0 or covers them): the
    lower layers' adapter weights are frozen and the input embeddings detached (a trained token's
    row then learns from the output layer alone), so no input of a lower layer needs a gradient:
    they run without autograd and backward stops at the lowest trained layer. Their adapter is
    merged into their weights for the run (rounded to the base's dtype)."""
    layers = causal_lm(model).base_model.layers
    if n <= 0 or n >= len(layers):
        return
    from peft.tuners.lora import LoraLayer

    for layer in layers[: len(layers) - n]:
        for p in layer.parameters():
            p.requires_grad_(False)
        # a frozen adapter is a constant: merged into its base weight, a frozen layer runs one matmul
        # per projection instead of three and two casts (its weights are saved as they were)
        for module in layer.modules():
            if isinstance(module, LoraLayer):
                module.merge()
    causal_lm(model).get_input_embeddings().register_forward_hook(lambda _m, _i, out: out.detach())


def starting_model(args, corpus: Corpus):
    """(model, tokenizer, peak learning rate) for the train command's arguments: --base an
    adapter directory, --base a causal LM (LoRA with --lora), else a new model of --size with a
    tokenizer trained on the corpus; the speed options (--base-dtype, --train-layers) applied."""
    model, tokenizer, lr = initial_model(args, corpus)
    if getattr(args, "base_dtype", None):
        trained_in_float32(model)
    train_top_layers(model, getattr(args, "train_layers", 0))
    return model, tokenizer, lr


def initial_model(args, corpus: Corpus):
    """starting_model before its speed options."""
    if args.base and is_adapter(Path(args.base)):
        # a later stage: the same adapter trained further over the same base (its own rank)
        model, tokenizer = adapted_model(Path(args.base), dtype=base_dtype(args), trainable=True)
        return model, tokenizer, args.lr or BASE_LR
    if args.base:
        from transformers import AutoTokenizer

        base_vocab = len(AutoTokenizer.from_pretrained(args.base))
        model, tokenizer = load_base(args.base, base_dtype(args), add_value_end=not args.keep_vocab)
        if args.lora:
            model = with_lora(model, list(range(base_vocab, len(tokenizer))), args.lora, args.lora_from)
        return model, tokenizer, args.lr or BASE_LR
    tokenizer = build_tokenizer(tokenizer_texts(corpus), args.vocab_size)
    return new_model(tokenizer, args.size, args.seed), tokenizer, args.lr or SCRATCH_LR
