"""Slot constraints: one interface for what a value may be, token by token, in every decoder.

Catalog attributes are typed (text, enumeration, boolean, number with unit). A rule belongs to one
attribute of a schema (built once per schema and tokenizer, SchemaPrompt.rules). The decoders
(hpd.Constrained, ar.ExtractiveProcessor) run the rules batched (batched_constraints.BatchedConstraint:
every slot of a batch in tensors). A span or choice rule also gives the state of one value being
decoded, rule.start(index, end), ending with token ``end`` (the terminator; in AR-JSON without it,
the next key's first token): training walks those along the gold values (row_packing). A state's
interface:

    state.allowed()   token ids allowed next, ``end`` among them when the value may end here: a
                      list or a LongTensor (cached per trie node); never empty
    state.push(tok)   the slot emitted tok (not ``end``)
    state.may_end()   ``end`` may come next
    state.finishing() the token the value must take next when its gap is full (half-way along a
                      fixed path such as "n/a"), else None
    state.length      tokens pushed

The same one-value states for numbers and free values, which nothing but the tests walks, are in
tests/support/reference_constraints.py: the reference the batched constraint is tested equal to,
step for step.

A rule of None is a free value: the decoders leave the slot unconstrained (AR-JSON still forces the
format around it). The kinds:

    SpanRule    extractive text: a substring of the document or "n/a" (extractive.SpanState)
    ChoiceRule  enumeration and boolean: one of the allowed values or "n/a", a token trie over each
                value as the tokenizer writes it in a slot (layout.value_ids)
    NumberRule  a number, then optionally a unit that converts to the schema's (normalize.known_units:
                the spellings of its dimension), or "n/a"; finish() writes it in the schema's unit

What confidence means: every decoder renormalizes over the allowed tokens at each step, so the
values' probabilities sum to 1 over the allowed paths. For a choice the confidence is the chosen
path's probability (rule.path_confidence: the product, terminator included: an option's length
says nothing about it); for text and numbers it stays the geometric mean of the token
probabilities, as without a rule.
"""

from __future__ import annotations

import re

import torch

from catalog.kinds import KINDS as KINDS  # what a slot may be constrained to (api.slot_rule checks it)
from extraction.engine.decode.extractive import DocIndex, SpanState, TokenTable
from extraction.engine.layout import FREE, NA, WORD, SchemaPrompt, Tokenizer, value_ids
from extraction.normalize import (
    BOOLEAN_VALUES as BOOLEAN_VALUES,  # a boolean slot's values, as normalize writes them
)
from extraction.normalize import DECIMAL, NUMBER_TEXT, known_units, normalize_number

# ---------------------------------------------------------------------------------- text: spans


class SpanRule:
    """Extractive text: a substring of the document or "n/a" (extractive.py), with the attribute's
    end / start rules (layout.FREE / WORD / COMPOUND)."""

    path_confidence = False

    def __init__(self, na: list[int], end_rule: int = FREE, start_rule: int = WORD):
        self.na, self.end_rule, self.start_rule = list(na), end_rule, start_rule

    def start(self, index: DocIndex | None, end: int) -> SpanState:
        if index is None:
            raise ValueError("extractive decoding needs RowDoc.span (extractive.doc_index of the text)")
        return SpanState(index, self.na, end, self.end_rule, self.start_rule)

    def finish(self, text: str) -> str:
        return text

    def accepts(self, text: str) -> bool:
        return True  # a span is judged against its document (SpanState), not here


# ---------------------------------------------------------------------------------- enumeration, boolean


class _Node:
    """A node of a choice trie: the next tokens, and the value that ends here (None: none)."""

    __slots__ = ("children", "value", "_allowed")

    def __init__(self):
        self.children: dict[int, _Node] = {}
        self.value: str | None = None
        self._allowed: dict[int, torch.Tensor] = {}

    def allowed(self, end: int) -> torch.Tensor:
        if end not in self._allowed:
            ids = sorted(self.children) + ([end] if self.value is not None else [])
            self._allowed[end] = torch.tensor(ids or [end], dtype=torch.long)
        return self._allowed[end]


class ChoiceState:
    def __init__(self, root: _Node, end: int):
        self.node: _Node | None = root  # None: off every path (unreachable under the constraint)
        self.end, self.length = int(end), 0

    def allowed(self) -> torch.Tensor:
        return self.node.allowed(self.end) if self.node is not None else torch.tensor([self.end])

    def may_end(self) -> bool:
        return self.node is not None and self.node.value is not None

    def finishing(self) -> int | None:
        if self.node is None or self.node.value is not None or not self.node.children:
            return None
        return min(self.node.children)  # some completion (gaps are widened to the longest path)

    def push(self, tok: int) -> None:
        self.node = self.node.children.get(int(tok)) if self.node is not None else None
        self.length += 1


class ChoiceRule:
    """One of a closed list of values, or "n/a" when allowed: a trie over each value's token ids."""

    path_confidence = True

    def __init__(self, paths: dict[str, list[int]]):
        """paths: value text -> its token ids in a slot (layout.value_ids without the terminator)."""
        self.root = _Node()
        self.values: dict[str, str] = {}  # stripped text -> the value, as listed
        for text, ids in paths.items():
            node = self.root
            for t in ids:
                node = node.children.setdefault(int(t), _Node())
            if node.value is None:  # two values with the same tokens: the first one listed
                node.value = text
            self.values[text.strip()] = text
        self.longest = max((len(ids) for ids in paths.values()), default=0)

    def start(self, index: DocIndex | None, end: int) -> ChoiceState:
        return ChoiceState(self.root, end)

    def finish(self, text: str) -> str:
        return self.values.get(text.strip(), text)

    def accepts(self, text: str) -> bool:
        return text.strip() in self.values


def choice_rule(tokenizer: Tokenizer, values, na_ids: list[int] | None) -> ChoiceRule:
    """A ChoiceRule over values (and "n/a" spelled na_ids, when not None) as the tokenizer writes
    them in a slot; empty and repeated values are dropped."""
    paths: dict[str, list[int]] = {}
    for v in values:
        text = " ".join(str(v).split())
        if text and text not in paths and text.lower() != NA:
            paths[text] = value_ids(tokenizer, text, terminator=-1)[:-1]
    if na_ids is not None:
        paths[NA] = list(na_ids)
    return ChoiceRule(paths)


# ---------------------------------------------------------------------------------- number with unit

# byte automaton of "<number>[ ]<unit>", leading whitespace allowed (the value prefix), a number being
# "<digits>[(.|,)<digits>]", "<digits>/<digits>" or "<digits>(-| )<digits>/<digits>" ("47-1/4": US
# catalogues write inches so); "<digits>(-| )<digits>" may end there too and reads as its first number
# (a range "10-20 cm" -> "10 cm"), so that a slot copying one is not caught after its dash
LEAD, INT, SEP, FRAC, GAP, UNIT, DASH, INT_GAP, NUM, SLASH, DEN = range(11)
_DIGITS = frozenset(b"0123456789")
_SEPARATORS = frozenset(b".,")
_NUMBER = re.compile(DECIMAL)
_SECOND_NUMBER = re.compile(r"^([0-9]+)[- ][0-9]+(?=\s|$|[^0-9/])")  # "10-20 cm" -> "10" + " cm"


def _lower(byte: int) -> int:
    return byte + 32 if 65 <= byte <= 90 else byte


class NumberRule:
    """A number with an optional unit of a known list, or "n/a"; finish() converts it to the
    schema's unit (normalize.normalize_number). The automaton's states are (phase, unit bytes so
    far); the tokens allowed in a state are found once, by walking the vocabulary's byte trie
    (extractive.TokenTable) along the automaton, and cached as a tensor."""

    path_confidence = False

    def __init__(self, table: TokenTable, unit: str = "", na: list[int] | None = None):
        self.table, self.unit = table, unit.strip()
        units = known_units(self.unit)  # spellings that convert to the schema's unit
        self.units = frozenset(u.encode("utf-8") for u in units)
        self.prefixes = frozenset(u[:k] for u in self.units for k in range(1, len(u) + 1))
        self.na = list(na) if na is not None else []
        self._tokens: dict[tuple, list[int]] = {}
        units_re = "|".join(re.escape(u.decode()) for u in self.units)
        self.pattern = re.compile(rf"^{NUMBER_TEXT}(?: ?(?:{units_re}))?$", re.IGNORECASE)

    def step(self, state: tuple | None, byte: int) -> tuple | None:
        """One byte on from state (None: dead)."""
        if state is None:
            return None
        phase, unit = state
        if phase == LEAD:
            return (LEAD, b"") if byte in b" \t" else (INT, b"") if byte in _DIGITS else None
        if phase in (INT, FRAC, NUM, DEN) and byte in _DIGITS:
            return (phase, b"")
        if phase in (SEP, DASH, INT_GAP, SLASH) and byte in _DIGITS:
            return ({SEP: FRAC, DASH: NUM, INT_GAP: NUM, SLASH: DEN}[phase], b"")
        if phase in (SEP, DASH, SLASH):
            return None  # a digit must follow
        if phase == INT and byte in _SEPARATORS:
            return (SEP, b"")
        if phase in (INT, NUM) and byte == ord("/"):
            return (SLASH, b"")
        if phase == INT and byte == ord("-"):
            return (DASH, b"")
        if phase in (INT, FRAC, NUM, DEN) and byte == 32:
            return (INT_GAP if phase == INT else GAP, b"")
        if phase in (INT, FRAC, NUM, DEN, GAP, INT_GAP, UNIT):
            grown = unit + bytes([_lower(byte)])
            return (UNIT, grown) if grown in self.prefixes else None
        return None

    def walk(self, state: tuple | None, piece: bytes) -> tuple | None:
        for byte in piece:
            state = self.step(state, byte)
        return state

    def accepting(self, state: tuple | None) -> bool:
        return state is not None and (
            state[0] in (INT, FRAC, NUM, DEN) or (state[0] == UNIT and state[1] in self.units)
        )

    def tokens(self, state: tuple) -> list[int]:
        """Every token whose bytes keep the automaton alive from state (cached per state)."""
        if state not in self._tokens:
            out, stack = [], [(self.table.trie, state)]
            while stack:
                node, st = stack.pop()
                for byte, child in node.items():
                    if byte is None:
                        continue
                    nxt = self.step(st, byte)
                    if nxt is not None:
                        out += child.get(None, [])
                        stack.append((child, nxt))
            self._tokens[state] = sorted(out)
        return self._tokens[state]

    def finish(self, text: str) -> str:
        """The number in the schema's unit; a value its gap cut (inside the unit or after the
        separator) keeps the number it has, or reads "n/a" without one."""
        text = _SECOND_NUMBER.sub(r"\1", text.strip())
        if text.lower() == NA:
            return NA
        if not self.pattern.match(text):
            head = _NUMBER.match(text)
            if head is None:
                return NA
            text = head.group(0)
        return normalize_number(text, self.unit)

    def accepts(self, text: str) -> bool:
        text = text.strip()
        return (text.lower() == NA and bool(self.na)) or bool(
            self.pattern.match(_SECOND_NUMBER.sub(r"\1", text))
        )


# ---------------------------------------------------------------------------------- schema -> rules


def slot_rules(schema: SchemaPrompt) -> list:
    """The rule of every attribute of a schema: SchemaPrompt.rules when the engine set them, else
    today's extractive rule for every attribute (a span with its end / start rule)."""
    if schema.rules:
        return list(schema.rules)
    return [
        SpanRule(schema.na_ids, schema.end_rule(n), schema.start_rule(n))
        for n in range(len(schema.attributes))
    ]


def needs_document(rules: list) -> bool:
    """Some rule is a span: the decoders need each document's extractive.DocIndex."""
    return any(isinstance(r, SpanRule) for r in rules)


def widen(attribute, rule):
    """The attribute with a gap that holds its rule's longest value (an enumeration value must never
    be cut by the gap)."""
    from dataclasses import replace

    longest = getattr(rule, "longest", 0)
    return replace(attribute, max_tokens=longest) if longest > attribute.max_tokens else attribute
