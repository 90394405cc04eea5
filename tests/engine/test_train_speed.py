"""The training speed options (--base-dtype, --train-layers, --sparse-token-rows) do what they say,
and the speed bench (tools/bench/train_speed.py) runs both recipes and prints where a step's time goes.

The model: a tiny random Gemma 3 (a sliding and a full layer, tied embeddings as the real one) given
a LoRA adapter with a trained <|eov|> row by the train command, then trained further from that
adapter, as the budget stages of models/slotwise-gemma3 are."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from extraction.engine import modeling
from extraction.engine.train.corpus import load_corpus
from extraction.engine.train.losses import causal_lm, training_hidden, training_logits
from extraction.engine.train.row_packing import collate
from extraction.engine.train.starting_model import base_dtype
from extraction.engine.train.trainer import optimizer, prepare_run, run_train, train_step
from tests.engine.test_train import SLIDING, fine_tune_args
from tests.support.toy_training import DOCS

TIED = dict(SLIDING, tie_word_embeddings=True)


def base_without_eov(folder: Path) -> Path:
    """A tiny random Gemma 3 whose tokenizer lacks <|eov|> (as Gemma 3's own), saved as a model
    directory: the train command adds the token and trains its row through peft."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from extraction.engine.modeling import random_model

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    special = ["<pad>", "<s>", "</s>"]
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=special, initial_alphabet=alphabet)
    raw.train_from_iterator(DOCS * 2, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    dims = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2)
    random_model("gemma3_text", tok, num_key_value_heads=1, **dims, **TIED).save_pretrained(folder / "base")
    tok.save_pretrained(folder / "base")
    return folder / "base"


def adapter_args(tmp_path, **options):
    """Train command arguments that train further an adapter (rank 4, every layer, <|eov|> trained)
    made here over a tiny Gemma 3, with options (the speed flags' attribute names) set."""
    start = tmp_path / "start"
    if not start.is_dir():
        (tmp_path / "first").mkdir()
        first = fine_tune_args(tmp_path / "first", base_without_eov(tmp_path / "first"))
        first.out, first.lora = str(start), 4
        assert run_train(first) == 0
    here = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    here.mkdir()
    args = fine_tune_args(here, start)
    for name, value in options.items():
        assert hasattr(args, name), name
        setattr(args, name, value)
    return args


def prepared(tmp_path, **options):
    args = adapter_args(tmp_path, **options)
    run = prepare_run(args, load_corpus(args.data, Path(args.splits_dir)))
    run.model.train()
    return run, next(run.sampler.batches(run.cfg.batch_tokens))


def eov_rows(model):
    """The adapter's trained token rows (peft's delta of the tied embedding)."""
    return [p for n, p in model.named_parameters() if "trainable_tokens_delta" in n]


def test_sparse_token_rows_give_peft_logits_and_gradients_without_the_whole_matrix(tmp_path):
    run, rows = prepared(tmp_path)
    model, batch = run.model, collate(rows, run.tokenizer.pad_token_id)
    (eov,) = eov_rows(model)
    grads, outs = [], []
    for sparse in (False, True):
        model.zero_grad(set_to_none=True)
        logits, labels = training_logits(model, batch, sparse_rows=sparse)
        torch.nn.functional.cross_entropy(logits, labels).backward()
        outs.append(logits.detach())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    assert grads[0].keys() == grads[1].keys() and any("trainable_tokens_delta" in n for n in grads[0])
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], rtol=1e-4, atol=1e-6)
    # negative control: the frozen layer alone writes the base's stale <|eov|> column, not the trained one
    eov_id = run.tokenizer.convert_tokens_to_ids("<|eov|>")
    head = causal_lm(model).get_output_embeddings().token_adapter.base_layer
    with torch.no_grad():
        hidden = training_hidden(model, batch)
        stale = head(hidden[batch["labels"] != -100])[:, eov_id]
    assert not torch.allclose(stale, outs[0][:, eov_id], atol=1e-3)
    assert eov.requires_grad


def layer_outputs(model) -> list[torch.Tensor]:
    """Hooks that keep each decoder layer's output of the next forward."""
    seen: list[torch.Tensor] = []
    for layer in causal_lm(model).base_model.layers:
        layer.register_forward_hook(
            lambda _m, _i, out: seen.append(out[0] if isinstance(out, tuple) else out)
        )
    return seen


def test_train_layers_freezes_the_lower_layers_which_run_without_autograd(tmp_path):
    for train_layers, lower_in_graph in ((0, True), (1, False)):  # 0: every layer, the control
        run, rows = prepared(tmp_path, train_layers=train_layers)
        model = run.model
        lower, upper = causal_lm(model).base_model.layers
        seen = layer_outputs(model)
        opt = optimizer(model, run.cfg)
        train_step(model, opt, rows, run.tokenizer.pad_token_id, run.cfg, "cpu")
        assert (seen[0].grad_fn is not None) == lower_in_graph  # no graph below the trained layer
        assert seen[1].grad_fn is not None
        lora = [(n, p) for n, p in lower.named_parameters() if "lora_" in n]
        assert lora and all((p.grad is not None) == lower_in_graph for _, p in lora)
        assert all(p.grad is not None for n, p in upper.named_parameters() if "lora_" in n)
        (eov,) = eov_rows(model)
        assert eov.grad is not None and eov.grad.abs().sum() > 0  # learns from the output layer still
        merged = [m.merged for m in lower.modules() if hasattr(m, "merged") and hasattr(m, "lora_A")]
        assert merged and all(merged) != lower_in_graph  # frozen adapters run merged into their weights
    # the saved adapter keeps the frozen layers' weights as they were
    from safetensors.torch import load_file

    from extraction.engine.train.trainer import saver

    saver(model, run.tokenizer, tmp_path / "saved", {})(1)
    start, saved = (
        load_file(d / "adapter_model.safetensors") for d in (tmp_path / "start", tmp_path / "saved")
    )
    lower_keys = [k for k in start if ".layers.0." in k and "lora_" in k]
    assert lower_keys and all(torch.equal(saved[k], start[k]) for k in lower_keys)
    assert any(not torch.equal(saved[k], start[k]) for k in start if ".layers.1." in k and "lora_" in k)


def test_a_bfloat16_base_trains_a_float32_adapter_with_float32_optimizer_state(tmp_path, monkeypatch):
    # as on a CPU with native bfloat16, so that the bfloat16 path is tested on every host
    monkeypatch.setattr(modeling, "native_cpu_bfloat16", lambda: True)
    run, rows = prepared(tmp_path, base_dtype="bfloat16", sparse_token_rows=True)
    model = run.model
    frozen = [p for p in model.parameters() if not p.requires_grad]
    trained = [p for p in model.parameters() if p.requires_grad]
    assert frozen and {p.dtype for p in frozen} == {torch.bfloat16}
    assert trained and {p.dtype for p in trained} == {torch.float32}
    opt = optimizer(model, run.cfg)
    before = [p.detach().clone() for p in trained]
    _, loss = train_step(model, opt, rows, run.tokenizer.pad_token_id, run.cfg, "cpu")
    assert torch.isfinite(loss)
    states = [opt.state[p] for p in trained]
    assert all(s["exp_avg"].dtype == s["exp_avg_sq"].dtype == torch.float32 for s in states)
    assert any(not torch.equal(b, p) for b, p in zip(before, trained, strict=True))  # it did learn


def test_a_vocabulary_without_the_value_terminator_ends_values_with_eos(tmp_path):
    """terminator_id looks the token up (no whole-vocabulary dict per packed row): where the
    tokenizer lacks <|eov|>, as Gemma 3's own, it is eos, and once the train command adds it, its id."""
    from transformers import AutoTokenizer

    from extraction.engine.layout import VALUE_END, terminator_id

    tok = AutoTokenizer.from_pretrained(base_without_eov(tmp_path))
    assert tok.unk_token_id is None and terminator_id(tok) == tok.eos_token_id
    tok.add_special_tokens({"unk_token": "<unk>"})  # an unknown token then looks up as unk
    assert terminator_id(tok) == tok.eos_token_id != tok.unk_token_id
    tok.add_special_tokens({"additional_special_tokens": [VALUE_END]})
    assert terminator_id(tok) == len(tok) - 1 != tok.eos_token_id


def test_a_bfloat16_base_runs_in_float32_on_a_cpu_without_native_bfloat16(tmp_path, monkeypatch, caplog):
    """Emulated bfloat16 (AVX2 only) made a training step's matmuls about 190 times slower: there the
    base trains in float32 and the log says why (on CUDA the option is taken as it is)."""
    monkeypatch.setattr(modeling, "native_cpu_bfloat16", lambda: False)
    with caplog.at_level("INFO", logger="extraction"):
        run, _ = prepared(tmp_path, base_dtype="bfloat16", sparse_token_rows=True)
    assert {p.dtype for p in run.model.parameters()} == {torch.float32}
    assert "no native bfloat16" in caplog.text
    args = adapter_args(tmp_path, base_dtype="bfloat16")
    args.device = "cuda"
    assert base_dtype(args) == torch.bfloat16


def test_document_blocks_give_the_dense_masks_logits_and_gradients_on_packed_rows():
    """Rows of several HPD and AR documents each, on a tiny Gemma 3 whose sliding layer's window (8)
    is narrower than the documents' spans: attention by document blocks gives the dense mask's
    logits (the sliding layer cut alike) and gradients; blocks that let a document's values see each
    other (every slot id a prompt's) do not."""
    from extraction.engine.layout import AttributeSpec
    from extraction.engine.modeling import random_model
    from extraction.engine.train.corpus import Example
    from extraction.engine.train.row_packing import build_row
    from tests.support.toy_training import GOLD, NAMES, toy_tokenizer

    tok = toy_tokenizer()
    dims = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
    model = random_model("gemma3_text", tok, num_key_value_heads=2, **dims, **dict(SLIDING, sliding_window=8))
    model.train()
    exs = [Example(d, "Shoes", dict(g)) for d, g in zip(DOCS, GOLD, strict=True)]
    specs = [AttributeSpec(n, max_tokens=10) for n in NAMES]
    rows = [build_row(tok, specs, exs[:2], exs[2:3]), build_row(tok, specs, exs[3:], exs[:1])]
    batch = collate(rows, tok.pad_token_id)
    assert max(batch["position_ids"].max(1).values) > 8 and len(set(rows[0].doc_ids)) == 4  # prefix, 3 docs

    def run(attention: str, batch=batch):
        model.zero_grad(set_to_none=True)
        hidden = training_hidden(model, batch, attention)
        logits, labels = training_logits(model, batch, hidden=hidden)
        torch.nn.functional.cross_entropy(logits, labels).backward()
        return logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    dense, dense_grads = run("dense")
    blocked, blocked_grads = run("blocks")
    torch.testing.assert_close(blocked, dense, rtol=1e-5, atol=1e-5)
    for name, grad in dense_grads.items():
        torch.testing.assert_close(blocked_grads[name], grad, rtol=1e-4, atol=1e-6)
    slots_blind = dict(batch, slot_ids=torch.where(batch["slot_ids"] >= 0, -1, batch["slot_ids"]))
    wrong, _ = run("blocks", slots_blind)
    assert not torch.allclose(wrong, dense, atol=1e-3)


def step_gradients(run, rows, **cfg) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """One step's loss terms and the trained parameters' gradients under the config changes cfg, in
    float32 (bfloat16 autocast would round the two paths' sums differently)."""
    from dataclasses import replace

    from extraction.engine.train.losses import step_losses
    from extraction.engine.train.trainer import collate_for

    model, cfg = run.model, replace(run.cfg, autocast="none", **cfg)
    model.zero_grad(set_to_none=True)
    batch = collate_for(rows, run.tokenizer.pad_token_id, model, cfg)  # dense or sparse choices
    terms, loss = step_losses(model, batch, cfg, "cpu")
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return {k: float(v.detach()) for k, v in terms.items()}, grads


def test_chunked_loss_gives_the_losses_and_gradients_of_the_whole_logits(tmp_path, monkeypatch):
    from extraction.engine.train import head_loss

    run, rows = prepared(tmp_path, sparse_token_rows=True)
    assert run.cfg.extractive_weight > 0  # both losses, the extractive one over its allowed tokens
    whole_terms, whole = step_gradients(run, rows)
    # chunks of 3 tokens: many chunks, a last one shorter, on a vocabulary of about 300
    vocab = run.model.get_output_embeddings().weight.shape[0]
    monkeypatch.setattr(head_loss, "CHUNK_BYTES", 3 * 4 * vocab)
    chunked_terms, chunked = step_gradients(run, rows, chunked_loss=True)
    assert chunked_terms.keys() == whole_terms.keys() == {"value", "extractive"}
    for name, value in whole_terms.items():
        assert chunked_terms[name] == pytest.approx(value, rel=1e-5)
    assert chunked.keys() == whole.keys() and any("trainable_tokens_delta" in n for n in whole)
    for name in whole:
        torch.testing.assert_close(chunked[name], whole[name], rtol=1e-4, atol=1e-6)
    # negative control: without the extractive part's gradient the adapter's gradients differ
    monkeypatch.setattr(head_loss, "_extractive_part", lambda logits, *a: (logits.new_zeros(()), None))
    _, without = step_gradients(run, rows, chunked_loss=True)
    assert any(not torch.allclose(without[n], whole[n], rtol=1e-4, atol=1e-6) for n in whole)


def test_chunked_loss_refuses_a_trained_output_layer():
    from extraction.engine.train.head_loss import FrozenHead

    with pytest.raises(ValueError, match="frozen output layer"):
        FrozenHead(torch.nn.Parameter(torch.zeros(4, 2)))
