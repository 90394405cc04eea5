"""Extractive decoding: every value is a substring of its document or "n/a", in HPD, fork and
AR-JSON; without it the outputs are unchanged."""

from __future__ import annotations

from dataclasses import replace

import torch
from transformers import LogitsProcessorList

from extraction.engine import layout
from extraction.engine.decode import ar, hpd
from extraction.engine.decode.extractive import (
    COMPOUND,
    FREE,
    WORD,
    DocIndex,
    TokenTable,
    allowed_mask,
    doc_index,
)
from tests.support.engine_reference import ForceFormat, allowed_tokens
from tests.support.reference_constraints import constrain
from tests.support.tiny_models import ATTRS, TEXTS, tiny_model

# a toy vocabulary: ids 0 and 1 are special (no bytes), 2 ends values
PIECES = [
    None,
    None,
    None,
    b" ",
    b"Red",
    b" Red",
    b" Pat",
    b"ent",
    b" Pa",
    b"t",
    b",",
    b" n",
    b"/",
    b"a",
    b"x",
    b"5",
    b"-",
    b".",
]
TOK = {p.decode(): i for i, p in enumerate(PIECES) if p}
END, NA_IDS = 2, [TOK[" n"], TOK["/"], TOK["a"]]
TABLE = TokenTable(PIECES)
DOC = DocIndex("Red  Patent, Red Pat 5", TABLE)  # whitespace runs are normalized like the prompt


def ids(*pieces: str) -> list[int]:
    return [TOK[p] for p in pieces]


def test_start_allows_tokens_found_at_a_word_start_whitespace_and_the_start_of_na():
    # matching is on text, leading whitespace dropped: "Red" and " Red" occur, so do " Pat", " Pa",
    # "," (a non-word character may start anywhere) and "5"; "ent", "t" and "a" occur only inside
    # "Patent" (no value starts mid-word); "x" does not occur; a bare " " may start a value
    # (layout.VALUE_PREFIX before digits); " n" starts "n/a"
    want = ids(" ", "Red", " Red", " Pat", " Pa", ",", " n", "5")
    assert allowed_tokens(DOC, [], NA_IDS, END) == sorted(want)


def test_it_continues_every_occurrence_and_may_end_once_started():
    # " Red" = "Red" (leading space dropped) occurs twice, each time followed by " Pat..."
    assert allowed_tokens(DOC, ids(" Red"), NA_IDS, END) == sorted(ids(" ", " Pat", " Pa") + [END])
    # "Red Pat" occurs twice: "Red Patent" continues with "ent", "Red Pat 5" with " "
    assert allowed_tokens(DOC, ids(" Red", " Pat"), NA_IDS, END) == sorted(ids("ent", " ") + [END])
    assert allowed_tokens(DOC, ids(" Red", " Pa", "t"), NA_IDS, END) == sorted(ids("ent", " ") + [END])
    assert allowed_tokens(DOC, ids(" ", "5"), NA_IDS, END) == [END]  # the text's last byte
    assert allowed_tokens(DOC, ids(" "), NA_IDS, END) == allowed_tokens(DOC, [], [], END)  # not started


def test_word_end_lets_a_value_end_only_where_an_occurrence_ends_a_word():
    # "Red Pa" occurs twice, inside "Patent" and inside "Pat 5": with word_end it must go on
    assert allowed_tokens(DOC, ids(" Red", " Pa"), NA_IDS, END) == sorted(ids("t") + [END])
    assert allowed_tokens(DOC, ids(" Red", " Pa"), NA_IDS, END, end_rule=WORD) == ids("t")
    # "Red Pat" ends a word in "Red Pat 5" (one occurrence is enough), "Red" before a space
    assert END in allowed_tokens(DOC, ids(" Red", " Pat"), NA_IDS, END, end_rule=WORD)
    assert END in allowed_tokens(DOC, ids(" Red"), NA_IDS, END, end_rule=WORD)
    assert allowed_tokens(DOC, ids(" ", "5"), NA_IDS, END, end_rule=WORD) == [END]  # end of the text
    assert allowed_tokens(DOC, ids(" Red", " Pat", "ent"), NA_IDS, END, end_rule=WORD) == sorted(
        ids(",") + [END]  # before the comma: a word end
    )
    doc = DocIndex("Red 5", TABLE)
    assert allowed_tokens(doc, ids(" n", "/", "a"), NA_IDS, END, end_rule=WORD) == [END]  # n/a still ends


def test_compound_rules_keep_words_joined_by_hyphen_slash_apostrophe_or_dot_together():
    doc = DocIndex("Red-Pat 5.5, Red/x", TABLE)
    # "Red" ends a word before "-" and "/", but not a compound
    assert END in allowed_tokens(doc, ids(" Red"), NA_IDS, END, end_rule=WORD)
    assert END not in allowed_tokens(doc, ids(" Red"), NA_IDS, END, end_rule=COMPOUND)
    assert END in allowed_tokens(doc, ids(" Red", "-"), NA_IDS, END, end_rule=COMPOUND)  # "-" is no word
    assert doc.word_end(len(b"Red-Pat"), COMPOUND) and not doc.word_end(len(b"Red-Pat 5"), COMPOUND)
    # "5" may start after the space, not after "5." (inside "5.5"); "Pat" not after "Red-"
    assert doc.occurrences(b"5", WORD) == [9, 11] and doc.occurrences(b"5", COMPOUND) == [9]
    assert " Pat" not in [PIECES[t].decode() for t in doc.first_tokens(COMPOUND) if PIECES[t]]
    assert TOK[" Pat"] in doc.first_tokens(WORD) and TOK["x"] in doc.first_tokens(WORD)
    assert TOK["x"] not in doc.first_tokens(COMPOUND)  # "x" only after "Red/"
    assert TOK["5"] in allowed_tokens(doc, [], NA_IDS, END, start_rule=COMPOUND)
    assert TOK["x"] not in allowed_tokens(doc, [], NA_IDS, END, start_rule=COMPOUND)


def test_a_value_that_left_the_document_may_only_end():
    # not reachable under the constraint; the state stays well defined (never an empty set)
    assert allowed_tokens(DOC, ids("x", "x"), [], END) == [END]


def test_na_path():
    doc = DocIndex("Red 5", TABLE)
    assert allowed_tokens(doc, ids(" n"), NA_IDS, END) == ids("/")  # no end before "n/a" is complete
    assert allowed_tokens(doc, ids(" n", "/"), NA_IDS, END) == ids("a")
    assert allowed_tokens(doc, ids(" n", "/", "a"), NA_IDS, END) == [END]
    doc = DocIndex("Red n/a", TABLE)  # "n/a" also in the text: "n/" is a substring, so it may end
    assert allowed_tokens(doc, ids(" n", "/"), NA_IDS, END) == sorted(ids("a") + [END])
    assert allowed_tokens(doc, ids(" n"), NA_IDS, END) == sorted(ids("/") + [END])


def test_token_pieces_of_a_byte_level_tokenizer(tokenizer):
    table = TokenTable.from_tokenizer(tokenizer)
    text = "Red Patent, 5000 mcg"
    for tid in tokenizer.encode(text, add_special_tokens=False):
        assert table.pieces[tid] == tokenizer.decode([tid]).encode()
    assert all(table.pieces[t] is None for t in tokenizer.all_special_ids)


def test_mask_and_constrain_renormalize_over_the_allowed_tokens():
    mask = allowed_mask([[0, 2], None], 4)
    assert mask.tolist() == [[True, False, True, False], [True, True, True, True]]
    lp = torch.log_softmax(torch.tensor([[1.0, 5.0, 2.0, 0.0], [1.0, 5.0, 2.0, 0.0]]), -1)
    out = constrain(lp, [[0, 2], None])
    assert int(out[0].argmax()) == 2 and torch.isinf(out[0, 1]) and torch.isinf(out[0, 3])
    assert torch.allclose(out[0, [0, 2]].exp().sum(), torch.tensor(1.0))
    assert torch.equal(out[1], lp[1])


# ---------------------------------------------------------------------------------- decoders


def is_span(tokenizer, value: list[int], index: DocIndex) -> bool:
    text = tokenizer.decode(value, skip_special_tokens=True).strip()
    return bool(text) and text.encode() in index.data


def setup(tokenizer):
    model = tiny_model("llama", tokenizer)
    schema = layout.schema_prompt(tokenizer, ATTRS)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS]
    spans = [doc_index(tokenizer, t) for t in TEXTS]
    return model, schema, docs, spans


def decode_hpd(model, schema, rows, extractive):
    pc = hpd.prefill_prefix(model, schema.prefix_ids, "cpu")
    return hpd.decode(model, schema, pc, rows, 2, 0, hpd.Counters(), extractive=extractive)


def test_hpd_values_are_spans_of_their_document_or_na(tokenizer):
    model, schema, docs, spans = setup(tokenizer)
    plain = decode_hpd(model, schema, hpd.hpd_rows(docs, 3, 2, spans), False)
    assert plain == decode_hpd(model, schema, hpd.hpd_rows(docs, 3, 2), False)  # spans alone change nothing
    out = decode_hpd(model, schema, hpd.hpd_rows(docs, 3, 2, spans), True)
    seen = 0
    for d, row in enumerate(out):
        for v in row.values():
            doc = spans[d]
            assert v.ids == schema.na_ids or is_span(tokenizer, v.ids, doc), (v.ids, doc.data)
            assert len(v.logprobs) >= 1 and all(lp <= 1e-6 for lp in v.logprobs)
            seen += 1
    assert seen == len(docs) * 3
    assert out != plain  # the random model's free values are not spans: the constraint acted
    forked = decode_hpd(model, schema, hpd.fork_rows(docs, 3, spans), True)
    assert len(forked) == len(out) == len(docs)
    for d, row in enumerate(forked):
        for n, v in row.items():
            assert v.ids == out[d][n].ids  # fork shares HPD's code path


def ar_values(tokens: list[int], schema) -> list[list[int]]:
    """Values of an AR output that follows ar_target: the ids between each key and the terminator."""
    out, i = [], 0
    for key in schema.key_ids:
        if tokens[i : i + len(key)] != key:
            break
        i += len(key)
        j = tokens.index(schema.terminator, i) if schema.terminator in tokens[i:] else len(tokens)
        out.append(tokens[i:j])
        i = j + 1
    return out


def test_ar_values_are_spans_of_their_document_or_na(tokenizer):
    model, schema, docs, spans = setup(tokenizer)
    assert schema.value_end_in_ar  # the stand-in tokenizer has <|eov|>
    prompts = [layout.build_ar_prompt(schema, d) for d in docs]
    ids, mask = ar.left_pad(prompts, 0, "cpu")

    def run(extractive: bool) -> list[list[int]]:
        # extractive: the processor alone (it forces the format); else the format forced, values free
        procs = [ar.ExtractiveProcessor(schema, spans, ids.shape[1])] if extractive else []
        procs = procs or [ForceFormat(schema, ids.shape[1])]
        res = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=200,  # free values have no gap: room for three whole documents
            do_sample=False,
            eos_token_id=schema.ar_eos,
            pad_token_id=0,
            logits_processor=LogitsProcessorList(procs),
        )
        return res[:, ids.shape[1] :].tolist()

    free = run(False)
    outs = run(True)
    n_values = 0
    for toks, doc in zip(outs, spans, strict=True):
        vals = ar_values(toks, schema)
        assert len(vals) == len(schema.key_ids)  # the processor forced the keys
        for v in vals:
            assert v == schema.na_ids or is_span(tokenizer, v, doc), (v, doc.data)
            n_values += 1
    assert n_values == len(docs) * 3
    assert free != outs  # the constraint acted


def test_generate_json_extractive_runs_and_keeps_pld_unconstrained(tokenizer):
    model, schema, docs, spans = setup(tokenizer)
    plain, _ = ar.generate_json(model, tokenizer, schema, docs, 2)
    again, _ = ar.generate_json(model, tokenizer, schema, docs, 2, spans=None)
    assert [o.text for o in plain] == [o.text for o in again]
    outs, forwards = ar.generate_json(model, tokenizer, schema, docs, 2, spans=spans)
    assert len(outs) == len(docs) and forwards > 0
    try:
        ar.generate_json(model, tokenizer, schema, docs, 1, prompt_lookup=3, spans=spans)
    except ValueError:
        pass
    else:
        raise AssertionError("prompt lookup must refuse the extractive constraint")


def ends_a_word(tokenizer, value: list[int], index: DocIndex) -> bool:
    text = tokenizer.decode(value, skip_special_tokens=True).strip().encode()
    return any(index.word_end(e) for e in index.occurrences(text))


def test_word_end_attributes_end_on_a_word_in_hpd_and_ar(tokenizer):
    model, schema, docs, spans = setup(tokenizer)
    # Brand and Size end on words, Color anywhere; Size starts on compounds ("10-46": never "46")
    flagged = replace(schema, end_rules=[WORD, FREE, WORD], start_rules=[WORD, WORD, COMPOUND])
    free = decode_hpd(model, schema, hpd.hpd_rows(docs, 3, 2, spans), True)
    out = decode_hpd(model, flagged, hpd.hpd_rows(docs, 3, 2, spans), True)
    mid_word = 0
    for d, (row, row_free) in enumerate(zip(out, free, strict=True)):
        for n, v in row.items():
            doc = spans[d]
            if v.ids != schema.na_ids and n != 1 and not v.truncated:  # a gap may cut a value anywhere
                assert ends_a_word(tokenizer, v.ids, doc), tokenizer.decode(v.ids)
            if v.ids != schema.na_ids and n == 2:
                text = tokenizer.decode(v.ids, skip_special_tokens=True).strip().encode()
                assert doc.occurrences(text, COMPOUND), text
            if n == 1:
                assert v.ids == row_free[n].ids  # an unflagged attribute is untouched
            free_ids = row_free[n].ids
            mid_word += free_ids != schema.na_ids and not ends_a_word(tokenizer, free_ids, doc)
    assert mid_word > 0  # without the flag the random model does stop inside words
    # AR-JSON: the processor reads the same flags (and, like HPD, cuts a value at its gap)
    prompts = [layout.build_ar_prompt(flagged, d) for d in docs]
    ids, mask = ar.left_pad(prompts, 0, "cpu")
    proc = ar.ExtractiveProcessor(flagged, spans, ids.shape[1])
    res = model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=200,
        do_sample=False,
        eos_token_id=flagged.ar_eos,
        pad_token_id=0,
        logits_processor=LogitsProcessorList([proc]),
    )
    checked = 0
    for b, (toks, doc) in enumerate(zip(res[:, ids.shape[1] :].tolist(), spans, strict=True)):
        for n, v in enumerate(ar_values(toks, flagged)):
            if v != schema.na_ids and n != 1 and not proc.truncated[b][n]:
                assert ends_a_word(tokenizer, v, doc), tokenizer.decode(v)
                checked += 1
            if v != schema.na_ids and n == 2:
                text = tokenizer.decode(v, skip_special_tokens=True).strip().encode()
                assert doc.occurrences(text, COMPOUND), text
    assert checked > 0


def first_tokens_by_scan(doc: DocIndex, rule: int) -> list[int]:
    """DocIndex.first_tokens the slow way: every token of the vocabulary tested on its own."""
    out = []
    for tid, piece in enumerate(doc.table.stripped):
        if piece is None:
            continue
        if piece == b"":
            if doc.table.pieces[tid]:
                out.append(tid)
        elif piece in doc.data and doc.occurrences(piece, rule):
            out.append(tid)
    return out


def test_first_tokens_from_the_trie_are_those_of_a_scan_of_the_whole_vocabulary():
    # the default model's byte-level tokenizer (49k tokens), on real titles with compounds,
    # numbers, punctuation and non-ASCII text
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained("models/slotwise-smollm2")
    texts = [
        "Lennix-M Men's Black/White High-Top Sneakers, Size 10.5 (EU 44)",
        "Maxwell House Original Roast Ground Coffee, 30.6 oz. Canister",
        "Crème brûlée 5.5\" — 2x 100ml L'Oréal Paris",
        *TEXTS,
    ]
    checked = 0
    for text in texts:
        doc = doc_index(tokenizer, text)
        for rule in (WORD, COMPOUND):
            fast = doc.first_tokens(rule)
            assert fast == first_tokens_by_scan(doc, rule), (text, rule)
            checked += len(fast)
    assert checked > 1000  # real vocabularies allow many first tokens per title
