"""Model plumbing shared by every decoder: loading, refusal of models we cannot serve exactly,
hidden-state forward with explicit positions / mask / cache, logits, greedy sampling, and small
random stand-ins (tokenizer + model built in code; no downloads)."""

from __future__ import annotations

import logging
import pathlib
from dataclasses import dataclass

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    DynamicCache,
    PreTrainedTokenizerFast,
)
from transformers.cache_utils import DynamicLayer

from extraction.engine.base_model import revision_of

log = logging.getLogger(__name__)


class UnsupportedModel(ValueError):
    """The engine cannot decode this model exactly (HPD.md: refuse rather than decode wrongly)."""


# ---------------------------------------------------------------------------------- loading

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class Loaded:
    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerFast
    name: str
    revision: str
    random_standin: bool = False


def native_cpu_bfloat16() -> bool:
    """Whether this CPU computes bfloat16 in hardware (AVX-512 BF16 or AMX). Elsewhere (AVX2 only)
    oneDNN emulates it and a bfloat16 model decodes several times slower than in float32."""
    return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


def cpu_dtype(requested: str | None, native_bfloat16: bool | None = None) -> str | None:
    """The CPU precision a model directory asks for ("cpu_dtype" in slotwise.json) on this CPU:
    bfloat16 was measured faster at equal F1 only where the CPU has it natively, so without that
    it is float32 (logged). native_bfloat16 None: this machine's (native_cpu_bfloat16)."""
    if requested != "bfloat16":
        return requested
    if native_bfloat16 is None:
        native_bfloat16 = native_cpu_bfloat16()
    if native_bfloat16:
        return requested
    log.info(
        "this CPU has no native bfloat16 (%s): decoding in float32", torch.backends.cpu.get_cpu_capability()
    )
    return "float32"


def default_dtype(device: str, dtype: str | None) -> torch.dtype:
    if dtype is not None:
        return DTYPES[dtype]
    return torch.bfloat16 if str(device).startswith("cuda") else torch.float32


def load_dir(model_dir: pathlib.Path, device: str, dtype: torch.dtype, attn: str) -> Loaded:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no per-load progress bars in worker logs and CLI tables
    from extraction.engine.base_model import is_adapter, merged_model

    if is_adapter(model_dir):  # a LoRA artifact or training checkpoint: merged into the base here
        model, tok = merged_model(model_dir, dtype=dtype, attn=attn)
    else:
        tok = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation=attn)
    model.to(device).eval()
    return Loaded(model, tok, model_dir.name, revision_of(model_dir))


QUANTIZATIONS = ("int8",)


def quantize(model: torch.nn.Module, kind: str) -> None:
    """In place: int8 dynamic quantization of every nn.Linear (weights int8, activations quantized
    per call; CPU kernels, avx512_vnni where the CPU has it). The embedding stays float."""
    if kind not in QUANTIZATIONS:
        raise ValueError(f"quantize={kind!r}: expected one of {', '.join(QUANTIZATIONS)}")
    if next(model.parameters()).device.type != "cpu":
        raise ValueError("int8 dynamic quantization runs on the CPU only")
    from torch.ao.quantization import quantize_dynamic

    quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)


# ---------------------------------------------------------------------------------- refusal


# Families whose forward takes one precomputed mask per layer type ({"full_attention": ...,
# "sliding_attention": ...}): the engine's masks can give their sliding layers the HPD mask cut to
# the window, in training and in decoding alike.
PER_LAYER_MASK_FAMILIES = frozenset({"gemma3_text"})


def cut_window(config) -> int | None:
    """The sliding window the engine's masks reproduce for this model (its sliding layers get the
    HPD mask cut to keys less than `window` positions back, as the model's own layers see), or None
    where the model has no such layers or its forward takes a single mask."""
    if getattr(config, "model_type", None) not in PER_LAYER_MASK_FAMILIES:
        return None
    if "sliding_attention" not in set(getattr(config, "layer_types", None) or []):
        return None
    return getattr(config, "sliding_window", None)


def check_servable(config, span: int | None = None) -> None:
    """Raise UnsupportedModel for models whose attention the engine's own 4D masks cannot reproduce.

    span: the largest position + 1 the caller will use; a sliding window at least that wide never
    hides anything, so it is served exactly. A family whose sliding layers the masks cut to the
    window (cut_window) is served at any span.
    """
    name = getattr(config, "model_type", "?")
    if getattr(config, "is_encoder_decoder", False):
        raise UnsupportedModel(f"{name}: encoder-decoder models are not served (decoder-only only)")
    kinds = set(getattr(config, "layer_types", None) or ["full_attention"])
    if kinds - {"full_attention", "sliding_attention"}:
        raise UnsupportedModel(
            f"{name}: layer types {sorted(kinds)} are not plain attention (recurrent or linear)"
        )
    if getattr(config, "attention_chunk_size", None):
        raise UnsupportedModel(f"{name}: chunked attention is not reproduced by the HPD mask")
    for attr in ("final_logit_softcapping", "attn_logit_softcapping"):
        if getattr(config, attr, None):
            raise UnsupportedModel(f"{name}: {attr} is not supported")
    window = getattr(config, "sliding_window", None)
    sliding = window is not None and (
        getattr(config, "layer_types", None) is None or "sliding_attention" in kinds
    )
    if sliding and cut_window(config) is None and (span is None or window < span):
        raise UnsupportedModel(
            f"{name}: sliding window of {window} tokens is active (needed span {span}); the HPD mask replaces the "
            "model's own masks and would attend beyond the window, so this model is refused"
        )


# ---------------------------------------------------------------------------------- forward


def new_cache() -> DynamicCache:
    # no config: plain full-attention layers (a config with a window would trim the cache)
    return DynamicCache()


class AppendLayer(DynamicLayer):
    """Append-only cache layer over a preallocated buffer [B, H, capacity, D]: a step writes its
    entries in place and attention reads a view, instead of re-concatenating the whole cache."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity, self.length = capacity, 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.device, self.is_initialized = key_states.device, True
            b, h, _, d = key_states.shape
            self._k = key_states.new_empty((b, h, self.capacity, key_states.shape[-1]))
            self._v = value_states.new_empty((b, h, self.capacity, value_states.shape[-1]))
        q = key_states.shape[-2]
        if self.length + q > self.capacity:
            raise RuntimeError(f"cache capacity {self.capacity} exceeded")
        self._k[:, :, self.length : self.length + q] = key_states
        self._v[:, :, self.length : self.length + q] = value_states
        self.length += q
        self.keys, self.values = self._k[:, :, : self.length], self._v[:, :, : self.length]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def select_rows(self, keep: torch.Tensor) -> None:
        """Keep only these batch rows (finished rows leave the decode)."""
        self._k, self._v = self._k.index_select(0, keep), self._v.index_select(0, keep)
        self.keys, self.values = self._k[:, :, : self.length], self._v[:, :, : self.length]


def cache_bytes(cache: DynamicCache) -> int:
    """Bytes of a cache's keys and values (what a prefix cache holds in memory)."""
    tensors = [t for layer in cache.layers for t in (layer.keys, layer.values) if t is not None]
    return sum(t.numel() * t.element_size() for t in tensors)


def model_bytes(model: torch.nn.Module) -> int:
    """Bytes of a model's parameters and buffers, each tensor once (tied weights count once; the
    packed weights of an int8-quantized layer are not counted)."""
    tensors = {id(t): t for t in (*model.parameters(), *model.buffers())}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def expand_cache(prefix: DynamicCache, rows: int, capacity: int | None = None) -> DynamicCache:
    """A fresh cache whose every row starts with the prefix entries (one prefill, shared).
    capacity: total entries per row to preallocate (append-only buffer); None = growing cache."""
    cache = new_cache()
    if capacity is not None:
        cache.layers = [AppendLayer(capacity) for _ in prefix.layers]
        cache.layer_class_to_replicate = None
    for i, layer in enumerate(prefix.layers):
        cache.update(layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1), i)
    return cache


def forward_hidden(
    model, input_ids: torch.Tensor, position_ids: torch.Tensor, mask: torch.Tensor, cache: DynamicCache
) -> torch.Tensor:
    """input_ids, position_ids: [B, Q]; mask: additive [B, 1, Q, KV+Q], or one such per layer type
    (masks.per_layer) -> last hidden states [B, Q, D]."""
    out = model.base_model(
        input_ids=input_ids, position_ids=position_ids, attention_mask=mask, cache=cache, use_cache=True
    )
    return out.last_hidden_state


def compile_layers(model) -> None:
    """torch.compile the cache-free parts of every decoder layer (its MLP and its two norms), with
    dynamic shapes (rows, queries and cache lengths change at every step). Regional compilation:
    the layers are one class, so they share one compiled code and a cold start compiles one layer.
    Not the whole layer: its attention writes the cache, and dynamo guards on the cache's state
    and the layer's index, so every layer recompiled until the recompile limit (8) left the rest
    eager; compiling the whole forward had not finished one HPD pass after 10 minutes on 2 cores."""
    for layer in model.base_model.layers:
        for part in ("mlp", "input_layernorm", "post_attention_layernorm"):
            getattr(layer, part).compile(dynamic=True)


def logits(model, hidden: torch.Tensor) -> torch.Tensor:
    """hidden [..., D] -> logits [..., V] in float32, with the logit scalings some families apply
    in their CausalLM forward (Granite's logits_scaling, Cohere's logit_scale)."""
    return _scaled(model.get_output_embeddings()(hidden).float(), model.config)


def _scaled(out: torch.Tensor, config) -> torch.Tensor:
    if getattr(config, "logits_scaling", None):
        out = out / config.logits_scaling
    if getattr(config, "logit_scale", None):
        out = out * config.logit_scale
    return out


def vocab_size(model) -> int:
    """The output layer's rows (the tokenizer's length, <|eov|> included)."""
    return model.get_output_embeddings().out_features


def pair_logits(model, hidden: torch.Tensor, rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """hidden [M, D]; (row, token) pairs [K] -> logits[rows, tokens] [K] in float32, as logits gives
    them, with the output layer computed on the pairs' distinct tokens only. A constrained step
    allows a few tokens per slot: the whole layer is 262,144 rows for Gemma 3 (more multiply-adds
    than its 18 transformer layers) and 49,152 for SmolLM2. A quantized head (int8) has no weight
    rows to take: there the whole layer runs."""
    head = model.get_output_embeddings()
    if not isinstance(head, torch.nn.Linear):
        return logits(model, hidden)[rows, tokens]
    distinct, where = torch.unique(tokens, return_inverse=True)
    part = torch.nn.functional.linear(
        hidden, head.weight[distinct], None if head.bias is None else head.bias[distinct]
    )  # [M, distinct]
    return _scaled(part.float()[rows, where], model.config)


def logprobs(model, hidden: torch.Tensor) -> torch.Tensor:
    """hidden [..., D] -> log-probabilities [..., V] in float32 (logits, then log-softmax)."""
    return torch.log_softmax(logits(model, hidden), dim=-1)


def greedy(lp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """lp [..., V] -> (token [...], its log-probability [...])."""
    best, tok = lp.max(dim=-1)
    return tok, best


# ---------------------------------------------------------------------------------- random stand-ins

STANDIN_CORPUS = (
    "Diesel Men's Exposure High-Top Sneaker black leather size 10 women cotton shirt coffee beans "
    "vitamin D3 1000 IU softgels organic green tea 100 count pack fishing lure guitar strings helmet "
    "n/a Brand Color Size Material Gender Model name Product type Flavor Capacity Weight"
)


def build_tokenizer(texts: list[str], vocab_size: int = 2048) -> PreTrainedTokenizerFast:
    """A small byte-level BPE trained in code on texts (plus the prompt wording)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from extraction.engine.layout import INSTRUCTION, VALUE_END

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<pad>", "<s>", "</s>", VALUE_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [INSTRUCTION, STANDIN_CORPUS, 'Product: \nJSON: {"a": "b", "c": "d"}', *texts]
    tok.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        additional_special_tokens=[VALUE_END],
    )


STANDIN_SIZE = {
    "hidden_size": 256,
    "intermediate_size": 768,
    "num_hidden_layers": 6,  # train.py's "small"
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}
STANDIN_VOCAB = 1024


def random_model(model_type: str, tokenizer, attn: str = "sdpa", seed: int = 0, **size) -> torch.nn.Module:
    """A randomly initialised causal LM of the given family (llama, qwen2, qwen3, mistral, phi3, gpt_neox...)."""
    kw = dict(STANDIN_SIZE, **size)
    kw.update(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    if model_type == "gpt_neox":
        kw.pop("num_key_value_heads", None)
    config = AutoConfig.for_model(model_type, **kw)
    config._attn_implementation = attn
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation=attn)
    return model.eval()


def random_standin(texts: list[str], device: str, dtype: torch.dtype, attn: str) -> Loaded:
    """The stand-in used until the bundled model exists: a random Llama of the bundled model's size."""
    tok = build_tokenizer(texts, STANDIN_VOCAB)
    model = random_model("llama", tok, attn=attn).to(device=device, dtype=dtype)
    return Loaded(model, tok, "random-llama-standin", "random0", random_standin=True)
