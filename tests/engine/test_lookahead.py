"""Lookahead (drafts proposed in lookahead.py, fed and read by hpd.py's step): drafts fed beside each
open slot's token and read only while confirmed give the values of one token per step, in fewer
forwards; endings the constraint forces (hpd.settle_forced) are written without feeding them. The bundled from-scratch model (trained: its values copy the document, so drafts are
confirmed) decodes real product titles under the extractive constraint; a negative control that
trusts the drafts decodes other values."""

from __future__ import annotations

import pytest
import torch

from extraction.engine import layout
from extraction.engine.api import Extractor, model_settings
from extraction.engine.decode import hpd
from extraction.engine.decode.batched_constraints import BatchedConstraint
from extraction.engine.decode.extractive import doc_index
from extraction.engine.decode.lookahead import Lookahead, copies_per_slot, propose
from tests.support.engine_schemas import BUNDLED, CATALOG
from tests.support.tiny_models import assert_same

EVERY_STEP = Lookahead(most=4, budget=10_000)  # copies drafted at every step, however many slots


@pytest.fixture(scope="module")
def bundled():
    if not (BUNDLED / "config.json").is_file():
        pytest.skip("no bundled model")
    return Extractor(BUNDLED, dtype="float32")


def decode_catalog(ex: Extractor, lookahead, attention="blocks", stack=2):
    """Every CATALOG schema's titles, extractive -> (values per schema, counters)."""
    settings = model_settings(BUNDLED)
    budgets, default = settings.get("attribute_budgets", {}), int(settings.get("default_budget", 16))
    counters, out = hpd.Counters(), []
    for names, texts in CATALOG.values():
        schema = ex.schema([layout.AttributeSpec(n, "", int(budgets.get(n, default))) for n in names])
        docs = [layout.doc_ids(ex.tokenizer, t) for t in texts]
        spans = [doc_index(ex.tokenizer, t) for t in texts]
        pc = hpd.prefill_prefix(ex.model, schema.prefix_ids, "cpu")
        rows = hpd.hpd_rows(docs, len(names), stack, spans)
        with torch.inference_mode():
            out.append(
                hpd.decode(ex.model, schema, pc, rows, 2, ex.pad_id, counters, True, attention, lookahead)
            )
    return out, counters


def test_lookahead_decodes_the_values_of_one_token_steps_in_fewer_forwards(bundled):
    drafted, c_draft = decode_catalog(bundled, EVERY_STEP)
    single, c_single = decode_catalog(bundled, None)
    dense, _ = decode_catalog(bundled, EVERY_STEP, attention="dense")  # dense rows never draft
    for a, b, c in zip(drafted, single, dense, strict=True):
        assert_same(a, b)
        assert_same(a, c)
    assert c_draft.accepted > 0 and c_draft.drafted > c_draft.accepted  # confirmed and rejected drafts
    assert c_single.drafted == 0
    assert c_draft.tokens_decoded == c_single.tokens_decoded
    assert c_draft.forward_steps < c_single.forward_steps
    # values of several tokens were read from one forward: the long values are in the test
    assert max(len(v.ids) for per_schema in drafted for doc in per_schema for v in doc.values()) >= 3


def test_negative_control_trusting_the_drafts_decodes_other_values(bundled, monkeypatch):
    single, _ = decode_catalog(bundled, None)
    # read every draft's output as if it had been confirmed
    monkeypatch.setattr(hpd, "confirmed", lambda tok, draft, term, number, gap: (draft >= 0) & (number < gap))
    trusted, _ = decode_catalog(bundled, EVERY_STEP)
    values = lambda out: [[{n: v.ids for n, v in d.items()} for d in s] for s in out]  # noqa: E731
    assert values(trusted) != values(single)


def test_forced_endings_are_written_without_a_forward(bundled, monkeypatch):
    settled, c_settled = decode_catalog(bundled, None)
    monkeypatch.setattr(hpd, "settle_forced", lambda *args: None)  # every token fed, one per step
    fed, c_fed = decode_catalog(bundled, None)
    for a, b in zip(settled, fed, strict=True):
        assert_same(a, b)
    assert c_settled.settled > 0 and c_fed.settled == 0
    assert c_settled.tokens_decoded == c_fed.tokens_decoded


def test_negative_control_a_choice_taken_as_forced_decodes_other_values(bundled, monkeypatch):
    fed, _ = decode_catalog(bundled, None)

    def first_allowed(self, idx, vocab):  # the lowest allowed token, as if it were the only one
        rows, toks, free = self.allowed(idx, vocab)
        out = torch.full((len(idx),), vocab, dtype=torch.long).scatter_reduce(0, rows, toks, "amin")
        return torch.where(free, -1, out)

    monkeypatch.setattr(BatchedConstraint, "forced", first_allowed)
    guessed, _ = decode_catalog(bundled, None)
    values = lambda out: [[{n: v.ids for n, v in d.items()} for d in s] for s in out]  # noqa: E731
    assert values(guessed) != values(fed)


# ---------------------------------------------------------------------------------- drafts


NA, TERM = [11, 12, 13], 99


def test_na_drafts_finish_the_na_and_end_it():
    values = torch.tensor([[11, -1, -1, -1, -1], [11, 12, -1, -1, -1], [11, 7, -1, -1, -1]])
    fed = torch.tensor([0, 1, 1])
    drafts = propose(
        Lookahead(most=4, budget=0), values, fed, torch.tensor([8, 8, 8]), torch.empty(3, 0), NA, TERM
    )
    assert drafts[0].tolist()[:3] == [12, 13, TERM] and drafts[1].tolist()[:2] == [13, TERM]
    assert (drafts[2] == -1).all()  # off the n/a path; no copies at budget 0
    # the gap bounds the drafts: a token fed at number fed + i needs fed + i < gap
    short = propose(Lookahead(), values[:1], fed[:1], torch.tensor([2]), torch.empty(1, 0), NA, TERM)
    assert short[0].tolist()[:2] == [12, -1]


def test_copy_drafts_follow_the_value_in_its_document():
    doc = torch.tensor([[5, 6, 7, 8, 6, 9, 10, -1]])
    # value so far [6]: the first 6 in the document; value so far [8, 6]: the 6 after an 8
    one = propose(
        Lookahead(most=3, budget=100),
        torch.tensor([[6, -1, -1]]),
        torch.tensor([0]),
        torch.tensor([9]),
        doc,
        NA,
        TERM,
    )
    two = propose(
        Lookahead(most=3, budget=100),
        torch.tensor([[8, 6, -1]]),
        torch.tensor([1]),
        torch.tensor([9]),
        doc,
        NA,
        TERM,
    )
    assert one[0].tolist()[:3] == [7, 8, 6] and two[0].tolist()[:3] == [9, 10, -1]
    nowhere = propose(
        Lookahead(most=3, budget=100),
        torch.tensor([[42, -1]]),
        torch.tensor([0]),
        torch.tensor([9]),
        doc,
        NA,
        TERM,
    )
    assert (nowhere == -1).all()


def test_copies_are_drafted_only_while_a_step_is_small():
    settings = Lookahead(most=4, budget=48)
    assert [copies_per_slot(settings, n) for n in (1, 8, 12, 16, 24, 48, 200)] == [4, 4, 3, 2, 1, 0, 0]
