"""How many tokens a product's document takes, estimated where the web process runs (no torch).

The preview warns of a document whose prompt a worker will refuse (EXTRACTION_MAX_PROMPT_POSITIONS):
a character count misleads, since 2,950 rare Chinese characters take 8,536 of the default model's
tokens (its tokenizer falls back to one token a UTF-8 byte for them). The count is the default
model's own tokenizer (the `tokenizers` library reads its tokenizer.json), or, where this host has no
model, the UTF-8 length: no tokenizer of the shipped models makes more tokens than bytes.
"""

from functools import cache
from pathlib import Path

from django.conf import settings

# Positions a document shares its prompt with: the instruction prefix, the attribute names and their
# values' gaps (about 90 for a schema of two attributes with the default model; a wide schema more).
PROMPT_RESERVE_POSITIONS = 512


@cache
def _tokenizer(model_dir: str):
    path = Path(model_dir) / "tokenizer.json"
    if not path.is_file():
        return None
    from tokenizers import Tokenizer  # torch-free; only the preview needs it

    return Tokenizer.from_file(str(path))


def document_tokens(title: str, description: str) -> int:
    """Tokens of the document the model reads for a product (catalog.models.Product.document)."""
    text = f"{title}\n{description}".strip() if description else title
    tokenizer = _tokenizer(settings.SLOTWISE_MODEL_DIR)
    if tokenizer is None:
        return len(text.encode("utf-8"))
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def document_limit() -> int:
    """The most tokens a document may take for its prompt to fit what a worker decodes."""
    return settings.EXTRACTION_MAX_PROMPT_POSITIONS - PROMPT_RESERVE_POSITIONS
