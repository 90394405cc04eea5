"""Extractive decoding: every value spells a substring of its document, or "n/a".

Values of most catalog attributes are copied from the product text (a brand, a colour, "5000 mcg"),
and a small model that has not fully learned to copy drifts off the text ("Banana" for a shoe's
brand). Here, at each step of a value, only tokens that keep the value a substring of the document
may be chosen; the model still decides where a value starts and where it ends.

Matching is on bytes, not token ids, so it holds for any tokenizer and any segmentation: the value
so far, leading whitespace dropped (layout.VALUE_PREFIX), plus the next token's bytes must occur in
the document text. The allowed next tokens are

  (a) at the start: every token whose bytes, leading whitespace dropped, occur in the document at
      the start of a word (a whitespace-only token too: "5000" is written " ", "5", ...); for an
      attribute whose values start on compound boundaries (start_rule COMPOUND, slotwise.json)
      at the start of a compound: "1.13 oz", never "13 oz";
  (b) inside a value: every token whose bytes continue an occurrence of the value so far;
  (c) the end token (the terminator) once the value has a non-space byte; for an attribute whose
      values end on a word boundary (SpanState end_rule, from the model's slotwise.json) only
      where an occurrence of the value so far does: "Sandro", not its "Sandr" (WORD); at the
      COMPOUND level, not inside a word joined by - / ' or . either: "Lennix-M", not "Lennix";
      "Black/White", not "Black"; "5.5", not "5";
  (d) the tokens of "n/a" (schema.na_ids), in order, then the end token.

Per tokenizer, TokenTable holds every token's bytes and a byte trie; per document, DocIndex holds
the text's bytes and the tokens allowed at the start; a SpanState (one per value being decoded)
keeps the end offsets of the occurrences of its value so far, so a step only walks those.
"""

from __future__ import annotations

from extraction.engine.decode.token_masks import allowed_mask  # noqa: F401 - callers import it here too
from extraction.engine.layout import (  # the boundary rules (tests and callers import them here too)
    COMPOUND,
    FREE,
    WORD,
)


def _byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's byte-to-unicode map (byte-level BPE vocabularies spell bytes this way)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    keep += list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


class TokenTable:
    """Bytes of every token of a vocabulary (None for special tokens) and a trie over them."""

    def __init__(self, pieces: list[bytes | None]):
        self.pieces = pieces
        self.trie: dict = {}
        for tid, piece in enumerate(pieces):
            if not piece:
                continue
            node = self.trie
            for b in piece:
                node = node.setdefault(b, {})
            node.setdefault(None, []).append(tid)
        self.stripped = [(p.lstrip() if p else None) for p in pieces]
        # a value's first token, leading whitespace dropped: a trie over the stripped pieces, and the
        # whitespace-only tokens (a value may start with one anywhere: "5000" is " ", "5", ...)
        self.stripped_trie: dict = {}
        self.blank: list[int] = []
        for tid, piece in enumerate(self.stripped):
            if piece is None:
                continue
            if piece == b"":
                if pieces[tid]:
                    self.blank.append(tid)
                continue
            node = self.stripped_trie
            for b in piece:
                node = node.setdefault(b, {})
            node.setdefault(None, []).append(tid)

    @classmethod
    def from_tokenizer(cls, tokenizer) -> TokenTable:
        return _table(tokenizer)

    def continuing(self, data: bytes, start: int) -> list[int]:
        """Tokens whose bytes are a prefix of data[start:]."""
        out, node = [], self.trie
        for b in data[start:]:
            node = node.get(b)
            if node is None:
                break
            out += node.get(None, [])
        return out


def token_pieces(tokenizer) -> list[bytes | None]:
    """Bytes of each token id: byte-level BPE spelling, else SentencePiece ("▁" = space, <0xNN>)."""
    size = len(tokenizer)
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    tokens = tokenizer.convert_ids_to_tokens(list(range(size)))
    bytemap = _byte_decoder()
    byte_level = all(t is None or all(c in bytemap for c in t) for t in tokens if t)
    out: list[bytes | None] = []
    for tid, tok in enumerate(tokens):
        if tid in special or tok is None:
            out.append(None)
        elif byte_level:
            out.append(bytes(bytemap[c] for c in tok))
        elif tok.startswith("<0x") and tok.endswith(">") and len(tok) == 6:
            out.append(bytes([int(tok[3:5], 16)]))
        else:
            out.append(tok.replace("\u2581", " ").encode("utf-8"))
    return out


def _table(tokenizer) -> TokenTable:
    cached = getattr(tokenizer, "_slotwise_token_table", None)
    if cached is None:
        cached = TokenTable(token_pieces(tokenizer))
        try:
            tokenizer._slotwise_token_table = cached  # built once per tokenizer (4k-150k tokens)
        except AttributeError:
            pass
    return cached


JOINERS = frozenset(b"-/'.")  # join two words into one compound ("Lennix-M", "Black/White", "5.5")


def _is_word(byte: int) -> bool:
    """A letter or digit (any byte of a multi-byte UTF-8 character counts as a letter)."""
    return byte >= 0x80 or chr(byte).isalnum()


class DocIndex:
    """A document's text (bytes) and the tokens a value may start with."""

    def __init__(self, text: str, table: TokenTable):
        self.data = " ".join(text.split()).encode("utf-8")
        self.table = table
        self._first: dict[int, list[int]] = {}

    def first_tokens(self, rule: int = WORD) -> list[int]:
        """Tokens a value may start with when it starts on a ``rule`` boundary (WORD or COMPOUND),
        sorted: the whitespace-only tokens, and every token whose bytes, leading whitespace
        dropped, occur in the text from an offset where a value may start (computed on first use
        by walking the table's trie of stripped pieces from each such offset: the text's length
        times a token's, not the vocabulary)."""
        if rule not in self._first:
            found = set(self.table.blank)
            data = self.data
            for at in range(len(data)):
                if not self.word_start(at, rule):
                    continue
                node = self.table.stripped_trie
                for b in data[at:]:
                    node = node.get(b)
                    if node is None:
                        break
                    found.update(node.get(None, ()))
            self._first[rule] = sorted(found)
        return self._first[rule]

    def word_start(self, at: int, rule: int = WORD) -> bool:
        """A value may start at a word's first character or at a non-word character: "Moscoloni",
        not its "M" alone (gold values start on a word boundary: all of OA-Mine's, 98% of
        AE-110k's, 99.7% of WDC-PAVE's in the dev sets); under COMPOUND not inside a compound
        either: "1.13 oz", not "13 oz"; "Mid-Blue", not "Blue"."""
        data = self.data
        if at == 0 or not _is_word(data[at]):
            return True
        if _is_word(data[at - 1]):
            return False
        joined = data[at - 1] in JOINERS and at >= 2 and _is_word(data[at - 2])
        return not (rule == COMPOUND and joined)

    def word_end(self, at: int, rule: int = WORD) -> bool:
        """A value may end before offset ``at`` under ``rule``: at the end of the text, or not
        between two word characters (WORD), nor before a joiner followed by a word character
        (COMPOUND)."""
        data = self.data
        if rule == FREE or at >= len(data) or not _is_word(data[at - 1]):
            return True
        if _is_word(data[at]):
            return False
        joined = data[at] in JOINERS and at + 1 < len(data) and _is_word(data[at + 1])
        return not (rule == COMPOUND and joined)

    def occurrences(self, needle: bytes, rule: int = WORD) -> list[int]:
        """End offsets of every occurrence of needle in the text that starts a word (``rule``)."""
        out, at = [], self.data.find(needle)
        while at >= 0:
            if self.word_start(at, rule):
                out.append(at + len(needle))
            at = self.data.find(needle, at + 1)
        return out


class SpanState:
    """The value so far of one slot: occurrences in the document and progress along "n/a"."""

    def __init__(
        self, index: DocIndex, na: list[int], end: int, end_rule: int = FREE, start_rule: int = WORD
    ):
        """end_rule: where the value may end (FREE: anywhere; WORD / COMPOUND: where it ends a word
        / a compound of the document, DocIndex.word_end); start_rule: where it may start (WORD or
        COMPOUND, DocIndex.word_start)."""
        self.index, self.na, self.end = index, list(na), int(end)
        self.end_rule, self.start_rule = end_rule, start_rule
        self.value = b""  # bytes so far, leading whitespace dropped
        self.started = False  # a non-space byte was written
        self.ends: list[int] = []  # end offsets of the occurrences of the value so far
        self.na_at = 0 if self.na else -1  # "n/a" tokens matched so far; -1: off the n/a path
        self.length = 0

    def may_end(self) -> bool:
        """The end token may come next: "n/a" is complete, or the value has a non-space byte and an
        occurrence that ends under end_rule (rule (c) of the module docstring)."""
        if self.na and self.na_at == len(self.na):
            return True
        return self.started and any(self.index.word_end(e, self.end_rule) for e in self.ends)

    def allowed(self) -> list[int]:
        """Token ids allowed next (sorted); never empty."""
        out: set[int] = set()
        if not self.started:
            out.update(self.index.first_tokens(self.start_rule))
        else:
            for e in self.ends:
                out.update(self.index.table.continuing(self.index.data, e))
        if self.may_end():
            out.add(self.end)
        if 0 <= self.na_at < len(self.na):
            out.add(self.na[self.na_at])
        return sorted(out) if out else [self.end]

    def finishing(self) -> int | None:
        """The token that must come next when the gap is full: the rest of "n/a" once on it."""
        return self.na[self.na_at] if 0 <= self.na_at < len(self.na) else None

    def push(self, tok: int) -> None:
        """The slot emitted tok (not the end token)."""
        tok = int(tok)
        piece = self.index.table.pieces[tok] if 0 <= tok < len(self.index.table.pieces) else None
        piece = piece or b""
        if not self.started:
            stripped = piece.lstrip()
            if stripped:
                self.started = True
                self.value = stripped
                self.ends = self.index.occurrences(stripped, self.start_rule)
        else:
            data = self.index.data
            self.value += piece
            self.ends = [e + len(piece) for e in self.ends if data.startswith(piece, e)]
        if self.na_at >= 0:
            ok = self.na_at < len(self.na) and self.na[self.na_at] == tok
            self.na_at = self.na_at + 1 if ok else -1
        self.length += 1


def doc_index(tokenizer, text: str) -> DocIndex:
    """The index extractive decoding needs for one product text."""
    return DocIndex(text, _table(tokenizer))
