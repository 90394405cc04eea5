"""A copy-friendly BPE tokenizer trained on the training text.

Extraction copies spans of the document, so a value must tokenize to exactly the tokens it has
inside the document. Ordinary byte-level BPE glues a leading space to a word (" Red" in the title
but "Red" after the quote that opens a JSON value), which makes the copy a different token. Here
every whitespace character, every punctuation character and every digit is a token of its own,
and BPE merges only runs of letters: any substring of the document that starts and ends on such
a boundary has the same ids alone as in place. Bytes underneath (GPT-2 byte level) so that no text
is ever unknown.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

BOS, EOS, PAD = "<s>", "</s>", "<pad>"
VALUE_END = "<|eov|>"  # ends every value, in HPD slots and in AR-JSON alike (layout.VALUE_END)
SPECIAL_TOKENS = [PAD, BOS, EOS, VALUE_END]  # ids 0, 1, 2, 3
# a run of letters with the space before it | one whitespace char | one digit | any other single char
SPLIT_PATTERN = r" ?[^\W\d_]+|\s|\d|[^\s]"
DEFAULT_VOCAB_SIZE = 4096


def build_tokenizer(texts: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE) -> PreTrainedTokenizerFast:
    """Train the tokenizer on ``texts`` (deterministic for the same texts in the same order)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    return wrap(tok)


def wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        extra_special_tokens=[VALUE_END],
        clean_up_tokenization_spaces=False,
        model_max_length=1 << 16,
    )
