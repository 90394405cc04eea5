"""Training: the HPD training forward is exactly prefill + teacher-forced HPD decode steps; the AR
part is exactly a plain causal forward; the training command runs end to end on a tiny config."""

from __future__ import annotations

import argparse
import json
import math
import random

import pytest
import torch

from extraction.engine.cli import add_train_parser
from extraction.engine.decode import hpd, masks
from extraction.engine.decode.extractive import COMPOUND, FREE, WORD
from extraction.engine.layout import (
    AttributeSpec,
    ar_target,
    build_ar_prompt,
    doc_ids,
    schema_prompt,
    terminator_id,
    value_ids,
)
from extraction.engine.modeling import expand_cache, forward_hidden, logprobs
from extraction.engine.train import augment
from extraction.engine.train.corpus import Example, load_corpus
from extraction.engine.train.losses import training_hidden, training_logits
from extraction.engine.train.row_packing import RowConfig, RowSampler, build_row, collate
from extraction.engine.train.starting_model import new_model
from extraction.engine.train.trainer import run_train
from tests.support.engine_reference import allowed_tokens
from tests.support.reference_constraints import constrain
from tests.support.toy_training import DOCS, GOLD, NAMES, toy_tokenizer, write_toy_data


@pytest.fixture(scope="module")
def tokenizer():
    return toy_tokenizer()


def tiny_model(tokenizer, attn: str = "sdpa"):
    model = new_model(tokenizer, "tiny", seed=3)
    model.config._attn_implementation = attn
    return model.float().eval()


def examples():
    return [Example(d, "Shoes", dict(g)) for d, g in zip(DOCS, GOLD, strict=True)]


def teacher_forced_hpd(model, schema, docs: list[list[int]], values: list[list[list[int] | None]]):
    """Reference: the engine's HPD prefill, then decode steps that feed the gold tokens instead of
    the argmax. -> {(j, n): [log-probs predicting value token 1, 2, ..., terminator]}."""
    device = torch.device("cpu")
    n_attr = len(schema.attributes)
    slots = [[n for n in range(n_attr) if values[j][n] is not None] for j in range(len(docs))]
    row = [hpd.RowDoc(d, n_attr, slots[j]) for j, d in enumerate(docs)]
    rows = hpd.build_rows(schema, [row], pad_id=0, device=device)
    prefix = hpd.prefill_prefix(model, schema.prefix_ids, device)
    P = len(schema.prefix_ids)
    B = 1
    kv_pos = torch.cat([torch.arange(P)[None], rows.position_ids], 1)
    kv_doc = torch.cat([torch.full((B, P), -1), rows.doc_ids], 1)
    cache = expand_cache(prefix, B)
    mask = masks.prefill_mask(rows.position_ids, rows.doc_ids, kv_pos, kv_doc, model.dtype)
    hidden = forward_hidden(model, rows.input_ids, rows.position_ids, mask, cache)
    at_keys = torch.gather(hidden, 1, rows.slot_index[:, :, None].expand(-1, -1, hidden.shape[-1]))
    first = logprobs(model, at_keys)[0]  # [S, V]
    owner = rows.owner[0]
    targets = [values[j][n] for j, n in owner]  # value ids + terminator
    out = {o: [first[s]] for s, o in enumerate(owner)}
    base = masks.slot_prompt_mask(rows.slot_start - 1, rows.slot_doc, kv_pos, kv_doc, model.dtype)
    gen_slot = torch.empty((B, 0), dtype=torch.long)
    step = 0
    while True:
        open_slots = [s for s, t in enumerate(targets) if len(t) - 1 > step]  # slots with a token to feed
        if not open_slots:
            break
        order = torch.tensor([open_slots])
        ids = torch.tensor([[targets[s][step] for s in open_slots]])
        pos = rows.slot_start[0, order[0]][None] + step
        gen_slot = torch.cat([gen_slot, order], 1)
        mask = masks.step_mask(base, gen_slot, order, torch.ones_like(order, dtype=torch.bool))
        hidden = forward_hidden(model, ids, pos, mask, cache)
        lp = logprobs(model, hidden)[0]
        for q, s in enumerate(open_slots):
            out[owner[s]].append(lp[q])
        step += 1
    return out


# "blocks": the training forward by document blocks (--attention blocks, engine/train/doc_blocks.py)
@pytest.mark.parametrize("attn,attention", [("sdpa", "dense"), ("eager", "dense"), ("sdpa", "blocks")])
def test_training_forward_equals_prefill_plus_teacher_forced_hpd_steps(tokenizer, attn, attention):
    torch.manual_seed(0)
    model = tiny_model(tokenizer, attn)
    specs = [
        AttributeSpec("Brand", max_tokens=14),
        AttributeSpec("Color", max_tokens=12),
        AttributeSpec("Size", max_tokens=16),
    ]
    exs = examples()
    hpd_exs, ar_exs = exs[:3], exs[3:]
    row = build_row(tokenizer, specs, hpd_exs, ar_exs)
    batch = collate([row], tokenizer.pad_token_id)
    with torch.no_grad():
        hidden = training_hidden(model, batch, attention)
        logits, labels = training_logits(model, batch, only_labeled=False, hidden=hidden)
    train_lp = torch.log_softmax(logits, -1)  # [T, V]

    schema = schema_prompt(tokenizer, specs)
    assert schema.terminator == terminator_id(tokenizer) == tokenizer.convert_tokens_to_ids("<|eov|>")
    docs = [doc_ids(tokenizer, ex.text) for ex in hpd_exs]
    values = [
        [
            None if ex.gold[s.name] is None else value_ids(tokenizer, ex.gold[s.name], schema.terminator)
            for s in specs
        ]
        for ex in hpd_exs
    ]
    with torch.no_grad():
        ref = teacher_forced_hpd(model, schema, docs, values)

    # training indices: the last key token of each slot, then the appended value tokens in order
    doc_t, slot_t = batch["doc_ids"][0].tolist(), batch["slot_ids"][0].tolist()
    layout_key_end = {}
    from extraction.engine.layout import build_hpd_layout

    lay = build_hpd_layout(schema, docs)
    for j in range(len(docs)):
        for n in range(len(specs)):
            layout_key_end[(j, n)] = lay.key_end[j][n]
    appended: dict[tuple[int, int], list[int]] = {}
    for t, (d, s) in enumerate(zip(doc_t, slot_t, strict=True)):
        if s >= 0:
            appended.setdefault((d, s), []).append(t)
    checked = 0
    for (j, n), ref_lps in ref.items():
        idx = [layout_key_end[(j, n)], *appended[(j, n)]]
        assert len(idx) == len(ref_lps) == len(values[j][n])
        for k, (t, r) in enumerate(zip(idx, ref_lps, strict=True)):
            assert int(labels[t]) == values[j][n][k]  # the label is the gold token (terminator last)
            torch.testing.assert_close(train_lp[t], r, atol=1e-5, rtol=1e-5)
            checked += 1
    assert checked == int((labels[: len(doc_t)] != -100).sum()) - ar_label_count(row)
    # an unjudged attribute has no tokens and no loss
    assert (1, 2) not in appended and (1, 2) not in ref


def ar_label_count(row) -> int:
    n_hpd_docs = row.n_hpd
    return sum(1 for d, lab in zip(row.doc_ids, row.labels, strict=True) if d >= n_hpd_docs and lab != -100)


def test_ar_part_equals_plain_causal_forward(tokenizer):
    model = tiny_model(tokenizer)
    specs = [AttributeSpec(n, max_tokens=16) for n in NAMES]
    ex = examples()[0]
    row = build_row(tokenizer, specs, [examples()[2]], [ex])
    batch = collate([row], tokenizer.pad_token_id)
    with torch.no_grad():
        logits, labels = training_logits(model, batch, only_labeled=False)
    schema = schema_prompt(tokenizer, specs)
    prompt = build_ar_prompt(schema, doc_ids(tokenizer, ex.text))
    target = ar_target(tokenizer, schema, {n: ex.gold[n] for n in NAMES}).ids
    seq = torch.tensor([prompt + target])
    with torch.no_grad():
        ref = model(input_ids=seq).logits[0].float()
    ar_idx = [t for t, d in enumerate(row.doc_ids) if d == 1]  # the AR document (after 1 HPD doc)
    P = len(schema.prefix_ids)
    assert len(ar_idx) == len(seq[0]) - P
    torch.testing.assert_close(logits[ar_idx], ref[P:], atol=1e-4, rtol=1e-4)
    lab = labels[ar_idx].tolist()
    assert lab[len(prompt) - P - 1 : -1] == target and lab[-1] == -100


def test_negative_control_values_that_see_each_other_break_the_match(tokenizer):
    model = tiny_model(tokenizer)
    specs = [AttributeSpec(n, max_tokens=16) for n in NAMES]
    row = build_row(tokenizer, specs, examples()[:2], [])
    good = collate([row], tokenizer.pad_token_id)
    bad = {k: v.clone() for k, v in good.items()}
    bad["slot_ids"][bad["slot_ids"] >= 0] = 0  # every value in one slot: values see each other
    leaky = {k: v.clone() for k, v in good.items()}
    leaky["doc_ids"][leaky["doc_ids"] >= 0] = 0  # documents see each other
    with torch.no_grad():
        ref, _ = training_logits(model, good)
        for broken in (bad, leaky):
            out, _ = training_logits(model, broken)
            assert not torch.allclose(out, ref, atol=1e-4)


def test_tokenizer_copies_spans_with_the_same_ids(tokenizer):
    # a value is written after layout.VALUE_PREFIX (a space), as each word of the document but the
    # first follows a space: its ids must then be a run of the document's ids
    title = "Ellie Shoes Women's 8400, Red Patent, 14 M US"
    full = doc_ids(tokenizer, title)
    for span in ["Ellie Shoes", "Women's", "8400", "Red Patent", "14 M US", "Shoes Women"]:
        ids = value_ids(tokenizer, span, 0)[:-1]
        assert any(full[i : i + len(ids)] == ids for i in range(len(full))), span
    assert tokenizer.decode(tokenizer.encode(title, add_special_tokens=False)) == title
    assert tokenizer.eos_token_id is not None and tokenizer.bos_token_id is not None


def test_copy_augmentation_keeps_gold_verbatim():
    records = [
        {
            "input": "Ellie Shoes Women's 8400, Red Patent, 14 M US",
            "category": "Shoes",
            "target_scores": {
                "Brand": {"Ellie Shoes": 1},
                "Color": {"Red Patent": 1},
                "Size": {"14 M US": 1},
            },
        },
        {
            "input": "Crocs Women's Jayna Ballet Flat, Nautical Navy, 4 M US",
            "category": "Shoes",
            "target_scores": {"Brand": {"Crocs": 1}, "Color": {"Nautical Navy": 1}, "Size": {"n/a": 1}},
        },
    ]
    pools = augment.value_pools(records)
    rng = random.Random(0)
    cfg = augment.AugmentConfig(p_product=1.0, p_attribute=1.0, p_mutate=0.5)
    changed = 0
    for _ in range(20):
        for record in records:
            out = augment.augment_record(record, pools, rng, cfg)
            for forms in out["target_scores"].values():
                value = augment.first_form(forms)
                assert value is None or value in out["input"]
            changed += out["input"] != record["input"]
    assert changed > 10
    assert records[0]["input"] == "Ellie Shoes Women's 8400, Red Patent, 14 M US"  # never mutated in place
    m = augment.mutate("YA24a", random.Random(1))
    assert m != "YA24a" and len(m) == 5 and m[2:4].isdigit()


def test_phrase_replacements_are_words_of_another_title_and_stay_verbatim():
    records = [
        {
            "input": "Ellie Shoes Women's 8400, Red Patent, 14 M US",
            "category": "Shoes",
            "target_scores": {"Brand": {"Ellie Shoes": 1}, "Color": {"Red Patent": 1}},
        },
        {
            "input": "Crocs Women's Jayna Ballet Flat, (Nautical Navy), 4 M US",
            "category": "Shoes",
            "target_scores": {"Brand": {"Crocs": 1}, "Color": {"Nautical Navy": 1}},
        },
        {"input": "Folgers Classic Roast", "category": "Coffee", "target_scores": {"Brand": {"Folgers": 1}}},
    ]
    pools = augment.value_pools(records)
    phrases = augment.phrase_pool(records)
    assert phrases["Shoes"][1][5:7] == ["Nautical", "Navy"]  # brackets and commas stripped
    cfg = augment.AugmentConfig(p_product=1.0, p_attribute=1.0, p_mutate=0.0, p_phrase=1.0)
    shoe_words = {w for words in phrases["Shoes"] for w in words}
    rng = random.Random(0)
    seen = set()
    for _ in range(30):
        out = augment.augment_record(records[0], pools, rng, cfg, phrases)
        color = augment.first_form(out["target_scores"]["Color"])
        assert color in out["input"]
        assert len(color.split()) == 2 and set(color.split()) <= shoe_words  # never "Classic Roast"
        seen.add(color)
    assert len(seen) > 3  # phrases, not the two known colours
    # p_phrase 0 draws nothing extra: the same seed replays the swap-only recipe exactly
    plain = augment.AugmentConfig(p_product=1.0, p_attribute=1.0, p_mutate=0.3)
    a = [augment.augment_record(records[1], pools, random.Random(5), plain) for _ in range(3)]
    b = [augment.augment_record(records[1], pools, random.Random(5), plain, phrases) for _ in range(3)]
    assert a == b


def toy_argv(data: list[str], out, splits, *extra: str) -> list[str]:
    """`python -m extraction train ...` arguments for a tiny model on the toy data (a few seconds on a CPU)."""
    tiny = ["--size", "tiny", "--vocab-size", "300", "--batch-tokens", "600", "--row-tokens", "300"]
    return [
        "train",
        "--data",
        *data,
        "--out",
        str(out),
        "--splits-dir",
        str(splits),
        "--threads",
        "1",
        *tiny,
        *extra,
    ]


def toy_args(data: list[str], out, splits, *extra: str):
    """toy_argv parsed by the train parser alone."""
    parser = argparse.ArgumentParser()
    add_train_parser(parser.add_subparsers(dest="cmd"))
    return parser.parse_args(toy_argv(data, out, splits, *extra))


def test_train_command_runs_a_few_steps_on_a_tiny_config(tmp_path):
    from extraction.engine.cli import main  # the command as typed: `python -m extraction train ...`

    out = tmp_path / "model"
    argv = toy_argv(
        write_toy_data(tmp_path),
        out,
        tmp_path / "splits",
        *["--steps", "3", "--seed", "1", "--focus-steps", "2", "--focus-products", "2"],
        *["--extractive-loss", "1", "--lm-loss", "0.3", "--log-every", "1"],
    )
    assert main(argv) == 0
    for name in ("config.json", "model.safetensors", "tokenizer.json", "training.json"):
        assert (out / name).is_file(), name
    assert (tmp_path / "splits" / "toy-wdc-dev.jsonl").is_file()
    meta = json.loads((out / "training.json").read_text())
    assert meta["steps"] == 3 and meta["train"]["seed"] == 1
    assert meta["focus"]["steps"] == 2 and meta["focus"]["products_per_schema"] == 2
    assert meta["train"]["extractive_weight"] == 1.0 and meta["train"]["lm_weight"] == 0.3
    for h in meta["history"]:  # every loss term is logged, each a real number
        assert {"loss", "extractive", "lm"} <= set(h) and all(h[k] > 0 for k in ("loss", "extractive", "lm"))
    settings = json.loads((out / "slotwise.json").read_text())
    assert settings["extractive"] is True  # toy values are copied
    assert set(settings["word_end"]) <= set(NAMES)

    from extraction.engine.api import Document, Extractor

    ex = Extractor(out)
    res, _ = ex.extract(
        [Document("a", DOCS[0])], [AttributeSpec(n, max_tokens=4) for n in NAMES], stack=1, rows=1
    )
    assert set(res[0]) == set(NAMES)
    settings["word_end"] = ["Color"]
    (out / "slotwise.json").write_text(json.dumps(settings))
    schema = Extractor(out).schema([AttributeSpec(n, max_tokens=4) for n in NAMES])
    assert schema.end_rules == [FREE, WORD, FREE]  # the engine reads the model's lists by name
    settings["compound_end"], settings["compound_start"] = ["Color"], ["Size"]
    (out / "slotwise.json").write_text(json.dumps(settings))
    schema = Extractor(out).schema([AttributeSpec(n, max_tokens=4) for n in NAMES])
    assert schema.end_rules == [FREE, COMPOUND, FREE] and schema.start_rules == [WORD, WORD, COMPOUND]
    assert Extractor(out, extractive=False).word_end == frozenset()  # a rule of extractive decoding


def test_boundary_attributes_are_those_whose_training_values_end_or_start_on_one():
    from extraction.engine.train.corpus import Corpus, boundary_attributes, on_boundary

    assert on_boundary("Mens Loafer", "Men") is False
    assert on_boundary("Mens Loafer, Men", "Men") is True  # one occurrence at a word end is enough
    assert on_boundary("Red Patent, 14 M US", "14 M US") is True  # the end of the text
    assert on_boundary("size 5-55", "5-5") is False and on_boundary("Crocs", "Nike") is None
    assert (
        on_boundary("Black/White", "Black") is True and on_boundary("Black/White", "Black", COMPOUND) is False
    )
    assert on_boundary("1.13 oz", "13 oz", side="start") is True
    assert on_boundary("1.13 oz", "13 oz", COMPOUND, "start") is False
    records = []
    for i in range(25):
        gold = {"Brand": {f"Brand{i}": 1}, "Gender": {"Men": 1}, "Color": {"Red": 1}, "Net": {"13 oz": 1}}
        if i < 5:
            gold["Size"] = {"9": 1}
        color = "Red/Blue" if i == 0 else "Red"
        net = "1.13 oz" if i == 0 else "13 oz"
        title = f"Brand{i} {'Mens' if i % 2 else 'Men'} Loafer, {color}, {net}" + (", 9 M" if i < 5 else "")
        records.append({"input": title, "category": "Shoes", "target_scores": gold})
    corpus = Corpus(groups={("toy", "Shoes"): records})
    # Gender ends mid-word in 12 of 25 titles; Size has too few values to judge
    assert boundary_attributes(corpus) == ["Brand", "Color", "Net"]
    assert boundary_attributes(corpus, share=0.5) == ["Brand", "Color", "Gender", "Net"]
    # one "Red" of "Red/Blue" in 25: 96% at compound ends, under the 99% share
    assert boundary_attributes(corpus, COMPOUND) == ["Brand", "Net"]
    assert boundary_attributes(corpus, COMPOUND, "start") == ["Brand", "Color", "Gender"]  # not Net


def test_training_is_seeded(tmp_path):
    data = write_toy_data(tmp_path)
    losses = []
    for run in ("a", "b"):
        args = toy_args(data, tmp_path / run, tmp_path / "splits", "--steps", "2", "--log-every", "1")
        run_train(args)
        losses.append(json.loads((tmp_path / run / "training.json").read_text())["history"])
    assert losses[0] == [{**h, "minutes": losses[0][i]["minutes"]} for i, h in enumerate(losses[1])]


def local_base(tmp_path, family: str, **size):
    """A random local HF model of `family` with a tokenizer that lacks <|eov|> (as a base model's
    usually does), saved where --base can read it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from extraction.engine.modeling import random_model
    from extraction.engine.train.copy_tokenizer import wrap

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(
        DOCS * 2,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<pad>", "<s>", "</s>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tok = wrap(raw)
    base = tmp_path / "base"
    dims = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2)
    model = random_model(family, tok, num_key_value_heads=1, **dims, **size)
    model.save_pretrained(str(base))
    tok.save_pretrained(str(base))
    return base


def fine_tune_args(tmp_path, base):
    parser = argparse.ArgumentParser()
    add_train_parser(parser.add_subparsers(dest="cmd"))
    return parser.parse_args(
        [
            "train",
            "--data",
            *write_toy_data(tmp_path),
            "--out",
            str(tmp_path / "ft"),
            "--base",
            str(base),
            "--steps",
            "2",
            "--batch-tokens",
            "600",
            "--row-tokens",
            "300",
            "--threads",
            "1",
            "--splits-dir",
            str(tmp_path / "splits"),
        ]
    )


# Gemma 3 (270M is a candidate base): five of six layers slide over a 512-token window, wider than
# any document's span here, so its rows train under the HPD mask exactly as the other families'
SLIDING = {"head_dim": 16, "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 512}


@pytest.mark.parametrize(
    "family,size,model_class",
    [("qwen2", {}, "Qwen2ForCausalLM"), ("gemma3_text", SLIDING, "Gemma3ForCausalLM")],
)
def test_base_fine_tunes_a_local_hf_model_and_adds_the_value_end_token(tmp_path, family, size, model_class):
    args = fine_tune_args(tmp_path, local_base(tmp_path, family, **size))
    assert run_train(args) == 0
    from extraction.engine.api import Document, Extractor

    ex = Extractor(args.out)
    assert type(ex.model).__name__ == model_class
    eov = ex.tokenizer.convert_tokens_to_ids("<|eov|>")
    assert terminator_id(ex.tokenizer) == eov != ex.tokenizer.eos_token_id
    assert ex.model.get_input_embeddings().weight.shape[0] > eov  # embeddings resized for the new token
    res, _ = ex.extract(
        [Document("a", DOCS[0])], [AttributeSpec(n, max_tokens=3) for n in NAMES], stack=1, rows=1
    )
    assert set(res[0]) == set(NAMES)


def test_the_training_forward_of_a_sliding_window_model_sees_what_its_own_layers_see():
    """An 8-token window and a 24-token document laid out alone: the training forward (the HPD mask
    per layer type, its sliding layers cut to the window) equals the model's own forward, whose
    sliding layers hide what lies further back themselves; the plain HPD mask (no cut) does not."""
    from extraction.engine.modeling import random_model
    from extraction.engine.train import losses

    tok = toy_tokenizer()
    dims = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2)
    model = random_model("gemma3_text", tok, num_key_value_heads=1, **dims, **dict(SLIDING, sliding_window=8))
    ids = torch.tensor([tok(" ".join(DOCS))["input_ids"][:24]])
    assert ids.shape[1] == 24  # three windows long
    batch = {
        "input_ids": ids,
        "position_ids": torch.arange(24)[None],
        "doc_ids": torch.zeros_like(ids),
        "slot_ids": torch.full_like(ids, -1),  # prompt tokens only: the HPD mask is causal here
    }
    with torch.no_grad():
        own = model.model(input_ids=ids, position_ids=batch["position_ids"]).last_hidden_state
        ours = losses.training_hidden(model, batch)
        torch.testing.assert_close(ours, own, rtol=1e-5, atol=1e-5)
        uncut = losses.causal_lm(model).base_model(
            input_ids=ids,
            position_ids=batch["position_ids"],
            attention_mask=masks.hpd_mask(
                batch["position_ids"], batch["doc_ids"], batch["slot_ids"], torch.float32
            ),
        )
    assert torch.allclose(uncut.last_hidden_state[:, :8], own[:, :8], atol=1e-5)  # inside the window: alike
    assert not torch.allclose(uncut.last_hidden_state[:, 8:], own[:, 8:], atol=1e-3)  # beyond it: not


def test_a_window_narrower_than_a_documents_span_trains_cut_and_decodes_past_it(tmp_path):
    """With an 8-token window the rows' positions run past it: training goes on under the cut mask
    (above) and so does decoding, by HPD and AR alike (test_sliding_window.py checks its values
    token for token); a value longer than the window is refused, saying so."""
    from extraction.engine.api import Document, Extractor
    from extraction.engine.modeling import UnsupportedModel

    args = fine_tune_args(tmp_path, local_base(tmp_path, "gemma3_text", **dict(SLIDING, sliding_window=8)))
    assert run_train(args) == 0
    ex = Extractor(args.out)
    specs = [AttributeSpec(n, max_tokens=3) for n in NAMES]
    for decoder in ("hpd", "ar"):
        (values,), _ = ex.extract([Document("a", DOCS[0])], specs, decoder=decoder, stack=1, rows=1)
        assert set(values) == set(NAMES)
    with pytest.raises(UnsupportedModel, match="8-token sliding window"):
        ex.extract([Document("a", DOCS[0])], [AttributeSpec(NAMES[0], max_tokens=12)], stack=1, rows=1)


def test_rows_carry_only_judged_keys_and_keep_thins_a_data_set(tmp_path, tokenizer):
    corpus = load_corpus(write_toy_data(tmp_path), tmp_path / "splits")
    sampler = RowSampler(corpus, tokenizer, RowConfig(row_tokens=300, keep={"toy-wdc": 0.0}), None, 0)
    texts = [tokenizer.decode(r.input_ids) for r in sampler.epoch_rows()]
    assert texts and not any("Great shoes" in t for t in texts)  # toy-wdc drawn with share 0
    assert any("Crocs" in t for t in texts)
    unjudged = Example(DOCS[1], "Shoes", {"Brand": "Crocs", "Color": "Nautical Navy"})  # Size not judged
    judged = Example(DOCS[0], "Shoes", dict(GOLD[0]))
    sampler = RowSampler(corpus, tokenizer, RowConfig(row_tokens=1024), None, 0)
    (row,) = sampler._pack(NAMES, [unjudged])
    assert '"Size"' not in tokenizer.decode(row.input_ids)  # a key without a value only costs tokens
    (row,) = sampler._pack(NAMES, [unjudged, judged])
    assert '"Size"' in tokenizer.decode(row.input_ids)


def test_choices_are_what_extractive_decoding_allows_at_each_value_token(tokenizer):
    from extraction.engine.decode import extractive
    from extraction.engine.layout import build_hpd_layout

    specs = [AttributeSpec(n, max_tokens=16) for n in NAMES]
    exs = examples()
    hpd_exs = exs[:3]
    row = build_row(tokenizer, specs, hpd_exs, exs[3:], with_choices=True)
    schema = schema_prompt(tokenizer, specs)
    end = schema.terminator
    assert row.choices, "no choices recorded"
    for t, allowed in row.choices.items():
        assert row.labels[t] in allowed  # the gold token is always among them
    # HPD: per value, the choices are the decoder's SpanState.allowed() after the gold prefix
    lay = build_hpd_layout(schema, [doc_ids(tokenizer, ex.text) for ex in hpd_exs])
    for j, ex in enumerate(hpd_exs):
        index = extractive.doc_index(tokenizer, ex.text)
        for n, spec in enumerate(specs):
            value = ex.gold[spec.name]
            if value is None:
                continue
            target = value_ids(tokenizer, value, end)
            pairs = zip(row.doc_ids, row.slot_ids, strict=True)
            idx = [lay.key_end[j][n]] + [t for t, (d, s) in enumerate(pairs) if (d, s) == (j, n)]
            assert [row.labels[t] for t in idx] == target
            for k, t in enumerate(idx):
                assert row.choices[t] == allowed_tokens(index, target[:k], schema.na_ids, end)
    # AR: the tokens of judged values are constrained; keys and punctuation are not
    ar_labeled = [t for t, d in enumerate(row.doc_ids) if d == len(hpd_exs) and row.labels[t] != -100]
    constrained = [t for t in ar_labeled if t in row.choices]
    judged = [v for v in exs[3].gold.values() if v is not None]
    assert len(constrained) == sum(len(value_ids(tokenizer, v, end)) for v in judged)
    assert len(constrained) < len(ar_labeled)
    # without with_choices nothing is recorded (the ordinary loss alone)
    assert build_row(tokenizer, specs, hpd_exs, exs[3:]).choices == {}


def test_extractive_loss_is_cross_entropy_under_the_decoders_renormalization(tokenizer):
    from extraction.engine.train.losses import extractive_loss

    model = tiny_model(tokenizer)
    specs = [AttributeSpec(n, max_tokens=16) for n in NAMES]
    row = build_row(tokenizer, specs, examples()[:3], examples()[3:], with_choices=True)
    batch = collate([row], tokenizer.pad_token_id, len(tokenizer))
    with torch.no_grad():
        logits, labels = training_logits(model, batch)
    choices = batch["choices"]
    assert choices.shape == logits.shape
    allowed = [row.choices.get(t) for t, lab in enumerate(row.labels) if lab != -100]
    lp = constrain(torch.log_softmax(logits, -1), allowed)  # what the decoders rank
    sel = [i for i, a in enumerate(allowed) if a is not None]
    expected = -lp[sel, labels[sel]].mean()
    torch.testing.assert_close(extractive_loss(logits, labels, choices), expected)
    # narrower than the full vocabulary, so never above the ordinary loss on the same tokens
    full = torch.nn.functional.cross_entropy(logits[sel], labels[sel])
    assert extractive_loss(logits, labels, choices) < full


def test_lm_labels_are_the_next_tokens_of_each_document_text_only(tokenizer):
    specs = [AttributeSpec(n, max_tokens=16) for n in NAMES]
    exs = examples()
    row = build_row(tokenizer, specs, exs[:2], exs[2:3])
    assert len(row.lm_labels) == len(row.input_ids)
    for j, ex in enumerate(exs[:3]):
        text = doc_ids(tokenizer, ex.text)
        first = row.doc_ids.index(j)
        assert row.input_ids[first : first + len(text)] == text
        assert row.lm_labels[first : first + len(text) - 1] == text[1:]
        rest = [lab for t, lab in enumerate(row.lm_labels) if row.doc_ids[t] == j][len(text) - 1 :]
        assert set(rest) == {-100}  # keys, JSON target and values: no language-model loss
    assert all(lab == -100 for t, lab in enumerate(row.lm_labels) if row.doc_ids[t] < 0)  # the prefix


def test_batches_group_rows_of_similar_length_and_keep_every_row(tmp_path, tokenizer):
    corpus = load_corpus(write_toy_data(tmp_path), tmp_path / "splits")
    cfg = RowConfig(row_tokens=120)
    expected = sorted(len(r.input_ids) for r in RowSampler(corpus, tokenizer, cfg, None, 0).epoch_rows())
    sampler = RowSampler(corpus, tokenizer, cfg, None, 0)  # same seed: the same rows
    stream = sampler.batches(batch_tokens=1200)
    got, sizes = [], []
    batch = next(stream)
    while sampler.epoch == 1:  # the first batch of epoch 2 ends the loop
        widths = [len(r.input_ids) for r in batch]
        assert len(batch) == 1 or max(widths) * len(batch) <= 1200  # the budget counts padding
        got += widths
        sizes.append(len(batch))
        batch = next(stream)
    assert sorted(got) == expected  # every row of the epoch, once
    assert max(sizes) > 1  # rows do share batches


def test_loop_hooks_hear_each_step_stop_between_steps_and_resume_where_a_checkpoint_left_off(
    tmp_path, tokenizer
):
    """What the product's training job relies on (engine/train/fine_tune.py): a loss per step, a stop
    between steps, and a resumed loop that counts on from its checkpoint's step and seconds."""
    from extraction.engine.train.trainer import LoopHooks, TrainConfig, train_loop

    corpus = load_corpus(write_toy_data(tmp_path), tmp_path / "splits")
    sampler = RowSampler(corpus, tokenizer, RowConfig(row_tokens=300), None, 0)
    cfg = TrainConfig(steps=6, batch_tokens=600, warmup=1, autocast="none", log_every=100)
    heard: list[tuple[int, float, float]] = []
    stop_after_two = LoopHooks(on_step=lambda *a: heard.append(a), should_stop=lambda: len(heard) >= 2)
    result = train_loop(
        tiny_model(tokenizer), sampler, tokenizer.pad_token_id, cfg, "cpu", hooks=stop_after_two
    )
    assert result["stopped"] and result["steps"] == 2 and [s for s, _, _ in heard] == [1, 2]
    assert all(loss > 0 for _, loss, _ in heard)

    heard.clear()
    resumed = LoopHooks(start_step=4, spent_seconds=100.0, on_step=lambda *a: heard.append(a))
    result = train_loop(tiny_model(tokenizer), sampler, tokenizer.pad_token_id, cfg, "cpu", hooks=resumed)
    assert not result["stopped"] and result["steps"] == 6 and [s for s, _, _ in heard] == [5, 6]
    assert heard[0][2] >= 100.0  # its seconds go on from the checkpoint's, for the schedule and the cap

    capped = TrainConfig(steps=6, minutes=1.0, batch_tokens=600, warmup=1, autocast="none", log_every=100)
    result = train_loop(tiny_model(tokenizer), sampler, tokenizer.pad_token_id, capped, "cpu",
                        hooks=LoopHooks(start_step=1, spent_seconds=60.0))  # fmt: skip
    assert result["steps"] == 1  # the time cap was spent before the resume: no step more


def test_a_time_capped_run_reaches_its_peak_learning_rate_after_a_tenth_of_its_minutes():
    from extraction.engine.train.trainer import TrainConfig, lr_at, progress_at

    cfg = TrainConfig(steps=400, minutes=40, lr=8e-4, warmup=40)
    # step 10 of 400 but 20 of the 40 minutes gone (a slow host): warmed up, on the cosine
    progress = progress_at(cfg, 10, elapsed=20 * 60)
    assert progress == pytest.approx(0.5)
    assert lr_at(cfg, progress, 10) == pytest.approx(8e-4 * (0.1 + 0.9 * 0.5))
    # a run that keeps to its steps warms up over its warmup steps, as before
    assert lr_at(cfg, progress_at(cfg, 9, elapsed=0.0), 9) == pytest.approx(
        8e-4 * 10 / 40 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 9 / 400)))
    )
