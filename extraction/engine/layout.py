"""Prompt layout for hyper-parallel decoding (HPD) and the AR-JSON baseline.

All prompt wording lives here, so inference (hpd.py, ar.py) and training (training_rows.py) agree
token for token. A prompt is built from segments that are tokenized separately and concatenated as ids:

    prefix   = [bos] instruction + one line per attribute (name: description)      shared by J docs
    doc      = "Product: <text>\\nJSON: {"                                        one per document
    key n    = '"Name": "'  (n = 0)   or   '", "Name": "'  (n > 0)
    value n  = tokens of the value text, then the terminator (terminator_id: <|eov|> or eos)

HPD layout (positions jump by a gap G_n after key n; slot n owns positions p_n+1 .. p_n+G_n):

    memory:    prefix | doc_0 key_0 key_1 .. key_N-1 | doc_1 key_0 .. | ... (values appended later)
    position:  0..P-1 | P ....                       | P ....          (each doc restarts after prefix)
    doc id:    -1     | 0                            | 1
    slot id:   -1 for every prompt token; value tokens carry their attribute index n

AR layout: prefix + doc, the model writes key_0 value_0 key_1 value_1 .. '"}' eos.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Protocol

from catalog.kinds import ENUM, TEXT
from extraction.domain import DEFAULT_TOKEN_BUDGET, NA  # NA: absent attribute

# where a value may start / end in extractive decoding (extractive.DocIndex.word_start / word_end):
# anywhere, at a word boundary, or at a boundary of words joined by - / ' . ("Lennix-M", "5.5")
FREE, WORD, COMPOUND = 0, 1, 2

VALUE_END = (
    "<|eov|>"  # the value terminator when the tokenizer has it (else eos), in HPD slots and AR-JSON alike
)
# every value is written after a space (inside the JSON quotes), as every word but the first of a
# document follows one: with tokenizers that glue a space to the next word (" Red"), a value then
# has the very tokens it has in the document, so copying it is copying token ids
VALUE_PREFIX = " "
PROMPT_DOC = -1  # doc id of the shared prefix
PROMPT_SLOT = -1  # slot id of every prompt token
PAD = -2  # doc / slot id of padding entries: never visible to anyone

INSTRUCTION = (
    "Extract the value of each attribute from the product text below. "
    "Copy values exactly as written; write n/a when the product does not state the attribute.\n"
    "Attributes:\n"
)


class Tokenizer(Protocol):
    """The part of a Hugging Face tokenizer the engine uses."""

    eos_token_id: int | None
    bos_token_id: int | None

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, ids: list[int], skip_special_tokens: bool = ...) -> str: ...


@dataclass(frozen=True)
class AttributeSpec:
    """An attribute of a schema: name, description, token budget (the gap of its slot), and its
    type, which constrains its values in every decoder (constraints.py): kind "text" (a span of the
    document under extractive decoding, or free with free=True), "enum" (one of allowed_values),
    "boolean" (yes / no) or "number" (a number with a unit, written in ``unit``). na: "n/a" is
    allowed (enum, boolean and number; text always allows it)."""

    name: str
    description: str = ""
    max_tokens: int = DEFAULT_TOKEN_BUDGET
    kind: str = TEXT
    unit: str = ""
    allowed_values: tuple[str, ...] = ()
    free: bool = False
    na: bool = True

    def __post_init__(self):
        # a tuple, so that specs stay hashable (the engine caches a schema per tuple of specs)
        object.__setattr__(self, "allowed_values", tuple(str(v) for v in self.allowed_values or ()))


def with_values_listed(spec: AttributeSpec) -> AttributeSpec:
    """An enumeration whose prompt line lists its allowed values after its description, so that the
    slot reads what it may choose from (a model trained so says "enum_values_in_prompt" in its
    slotwise.json; one trained without never sees such a line)."""
    if spec.kind != ENUM or not spec.allowed_values:
        return spec
    listed = "one of: " + " | ".join(spec.allowed_values)
    return replace(spec, description=f"{spec.description} ({listed})" if spec.description else listed)


# ---------------------------------------------------------------------------------- text segments


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def attribute_line(a: AttributeSpec) -> str:
    """An attribute's line in the prompt: its name, then its description where it has one."""
    return f"- {a.name}: {a.description}" if a.description else f"- {a.name}"


def prefix_text(attributes: list[AttributeSpec]) -> str:
    return INSTRUCTION + "\n".join(attribute_line(a) for a in attributes) + "\n"


def doc_text(text: str) -> str:
    return f"Product: {' '.join(text.split())}\nJSON: {{"


def key_text(name: str, first: bool) -> str:
    return f'"{_quote(name)}": "' if first else f'", "{_quote(name)}": "'


END_TEXT = '"}'


def terminator_id(tokenizer: Tokenizer) -> int:
    """VALUE_END when the vocabulary has it, else eos. With VALUE_END, HPD slot n and AR value n
    predict the same token after the value (with eos, AR would have to write '"' there instead)."""
    value_end = _token_id(tokenizer, VALUE_END)
    if value_end is not None:
        return value_end
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no eos token: HPD needs one to end each value")
    return int(tokenizer.eos_token_id)


def _token_id(tokenizer: Tokenizer, token: str) -> int | None:
    """The id of one whole token of the vocabulary, or None. A lookup, not `get_vocab()`: that
    builds a dict of the whole vocabulary (0.48 s for Gemma's 262,145 tokens), and every row the
    trainer packs asks for the terminator."""
    if hasattr(tokenizer, "convert_tokens_to_ids"):
        found = tokenizer.convert_tokens_to_ids(token)
        # an unknown token comes back as the unk id (or None where there is no unk token)
        if found is None or (
            found == getattr(tokenizer, "unk_token_id", None)
            and token != getattr(tokenizer, "unk_token", None)
        ):
            return None
        return int(found)
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    return int(vocab[token]) if token in vocab else None


def _encode(tokenizer: Tokenizer, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


# ---------------------------------------------------------------------------------- schema prompt


@dataclass
class SchemaPrompt:
    """Token ids of everything that depends on the schema only (computed once per schema)."""

    attributes: list[AttributeSpec]
    prefix_ids: list[int]  # [P] shared instruction prefix, bos included when the tokenizer has one
    key_ids: list[list[int]]  # N lists: key segment n
    end_ids: list[int]  # '"}' closing the AR-JSON object
    terminator: int  # ends every value (VALUE_END, else eos)
    eos: int | None = None  # ends the AR-JSON output (None: same as terminator)
    na_ids: list[int] = field(default_factory=list)  # tokens of "n/a" (extractive decoding)
    # per attribute: where its values may end / start in extractive decoding (FREE, WORD or
    # COMPOUND, from the model's slotwise.json, set by the engine); empty: the defaults
    end_rules: list[int] = field(default_factory=list)
    start_rules: list[int] = field(default_factory=list)
    # per attribute: its slot constraint (constraints.py; None = free), set by the engine from the
    # attribute types; empty: every attribute extractive (constraints.slot_rules)
    rules: list = field(default_factory=list)

    def end_rule(self, n: int) -> int:
        return self.end_rules[n] if n < len(self.end_rules) else FREE

    def start_rule(self, n: int) -> int:
        return self.start_rules[n] if n < len(self.start_rules) else WORD

    @property
    def ar_eos(self) -> int:
        return self.terminator if self.eos is None else self.eos

    @property
    def value_end_in_ar(self) -> bool:
        """AR-JSON writes the terminator after each value when it is not the eos token."""
        return self.ar_eos != self.terminator

    @property
    def gaps(self) -> list[int]:
        return [a.max_tokens for a in self.attributes]


def schema_prompt(tokenizer: Tokenizer, attributes: list[AttributeSpec]) -> SchemaPrompt:
    bos = [int(tokenizer.bos_token_id)] if tokenizer.bos_token_id is not None else []
    return SchemaPrompt(
        attributes=list(attributes),
        prefix_ids=bos + _encode(tokenizer, prefix_text(attributes)),
        key_ids=[_encode(tokenizer, key_text(a.name, i == 0)) for i, a in enumerate(attributes)],
        end_ids=_encode(tokenizer, END_TEXT),
        terminator=terminator_id(tokenizer),
        eos=None if tokenizer.eos_token_id is None else int(tokenizer.eos_token_id),
        na_ids=_encode(tokenizer, VALUE_PREFIX + NA),
    )


def doc_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    return _encode(tokenizer, doc_text(text))


def value_ids(tokenizer: Tokenizer, value: str, terminator: int, max_tokens: int | None = None) -> list[int]:
    """Value tokens followed by the terminator; cut to max_tokens value tokens when given."""
    ids = _encode(tokenizer, VALUE_PREFIX + (value.strip() if value.strip() else NA))
    if max_tokens is not None:
        ids = ids[:max_tokens]
    return ids + [terminator]


# ---------------------------------------------------------------------------------- HPD layout


@dataclass
class DocLayout:
    """The part of an HPD prompt owned by one document: doc tokens and keys with their gaps."""

    input_ids: list[int]
    position_ids: list[int]  # start at the prefix length
    key_end: list[int]  # N: index (within this doc part) of the last token of key n
    slot_start: list[int]  # N: position of the first value token of slot n (p_n + 1)


def doc_layout(schema: SchemaPrompt, doc: list[int], n_keys: int | None = None) -> DocLayout:
    """The document, then keys 0..n_keys-1 (default: every key), each followed by its slot's gap."""
    n = len(schema.key_ids) if n_keys is None else n_keys
    pos = len(schema.prefix_ids)
    ids, positions, key_end, slot_start = list(doc), list(range(pos, pos + len(doc))), [], []
    pos += len(doc)
    for key, gap in zip(schema.key_ids[:n], schema.gaps[:n], strict=True):
        ids += key
        positions += list(range(pos, pos + len(key)))
        pos += len(key)
        key_end.append(len(ids) - 1)
        slot_start.append(pos)
        pos += gap  # the slot owns pos .. pos+gap-1; the next key starts after it
    return DocLayout(ids, positions, key_end, slot_start)


@dataclass
class HPDLayout:
    """One stacked HPD prompt: a shared prefix and J documents, flattened in memory order."""

    input_ids: list[int]  # [T]
    position_ids: list[int]  # [T]
    doc_ids: list[int]  # [T] -1 = prefix, j = document j
    slot_ids: list[int]  # [T] -1 = prompt token
    prefix_len: int
    key_end: list[list[int]] = field(default_factory=list)  # [J][N] memory index of key n's last token
    slot_start: list[list[int]] = field(default_factory=list)  # [J][N] position of value n's first token


def build_hpd_layout(
    schema: SchemaPrompt, docs: list[list[int]], with_prefix: bool = True, n_keys: list[int] | None = None
) -> HPDLayout:
    """Stack the documents (token ids from doc_ids) after one prefix: the one row builder of HPD
    decoding (hpd.build_rows), the fork baseline and training (row_packing.build_row).

    with_prefix=False leaves the prefix out of memory (it lives in a shared cache) but keeps its
    length in the positions; indices in key_end then count from the first document token.
    n_keys: how many keys each document lays out (the fork baseline: keys 0..n for slot n);
    default every key.
    """
    pre = schema.prefix_ids if with_prefix else []
    out = HPDLayout(
        list(pre),
        list(range(len(pre))),
        [PROMPT_DOC] * len(pre),
        [PROMPT_SLOT] * len(pre),
        len(schema.prefix_ids),
    )
    for j, doc in enumerate(docs):
        part = doc_layout(schema, doc, None if n_keys is None else n_keys[j])
        offset = len(out.input_ids)
        out.input_ids += part.input_ids
        out.position_ids += part.position_ids
        out.doc_ids += [j] * len(part.input_ids)
        out.slot_ids += [PROMPT_SLOT] * len(part.input_ids)
        out.key_end.append([offset + k for k in part.key_end])
        out.slot_start.append(part.slot_start)
    return out


# ---------------------------------------------------------------------------------- AR-JSON layout


def build_ar_prompt(schema: SchemaPrompt, doc: list[int]) -> list[int]:
    """Prompt ids of the AR-JSON baseline: prefix + doc (positions 0..len-1, as in HPD)."""
    return schema.prefix_ids + list(doc)


@dataclass
class ARTarget:
    """What the AR model writes after build_ar_prompt: keys and values, '"}', eos."""

    ids: list[int]
    keep: list[bool]  # per id: carries loss (not the "n/a" placeholder of an unjudged attribute)
    values: list[tuple[int, list[int]]]  # per judged value: (offset of its first id, its ids)


def ar_target(tokenizer: Tokenizer, schema: SchemaPrompt, gold: dict[str, str | None]) -> ARTarget:
    """The AR-JSON target for gold (attribute name -> value text, NA when absent, None or missing
    when unjudged: written "n/a" without loss). Each value keeps its terminator when that is
    VALUE_END (not eos), '"Brand": "Diesel<|eov|>", ...': HPD slot 0 and AR value 0 see the same
    context, so both predict the same token after the value. Values are never cut (training
    writes them whole; at inference ar.ExtractiveProcessor ends a value at its gap)."""
    ids: list[int] = []
    keep: list[bool] = []
    values: list[tuple[int, list[int]]] = []
    for n, spec in enumerate(schema.attributes):
        value = gold.get(spec.name)
        ids += schema.key_ids[n]
        keep += [True] * len(schema.key_ids[n])
        vids = value_ids(tokenizer, NA if value is None else value, schema.terminator)
        vids = vids if schema.value_end_in_ar else vids[:-1]
        if value is not None:
            values.append((len(ids), vids))
        ids += vids
        keep += [value is not None] * len(vids)
    tail = [*schema.end_ids, schema.ar_eos]
    return ARTarget(ids + tail, keep + [True] * len(tail), values)


def ar_max_new_tokens(schema: SchemaPrompt) -> int:
    keys = sum(len(k) for k in schema.key_ids)
    ends = len(schema.key_ids) if schema.value_end_in_ar else 0
    return keys + sum(schema.gaps) + ends + len(schema.end_ids) + 1


def parse_ar_json(text: str, names: list[str]) -> dict[str, str | None]:
    """Tolerant parse of AR-JSON output: a value per name (VALUE_PREFIX and stray spaces stripped),
    None when its key never appeared."""
    text = text.strip()
    start = text if text.startswith("{") else "{" + text
    try:
        obj = json.loads(start)
        if isinstance(obj, dict):
            return {n: (str(obj[n]).strip() if n in obj else None) for n in names}
    except ValueError:
        pass
    out: dict[str, str | None] = {}
    for name in names:
        key = f'"{_quote(name)}": "'
        at = text.find(key)
        if at < 0:
            out[name] = None
            continue
        rest = text[at + len(key) :]
        ends = [i for i in (rest.find('", "'), rest.find('"}'), rest.find('",')) if i >= 0]
        out[name] = (rest[: min(ends)] if ends else rest).strip()
    return out
