"""Copy augmentation: teach the model to copy spans it has never seen.

A probe model got 74% of the values it had seen in training and 8% of the unseen ones: it learned
value lists, not copying. Here a training product gets some of its gold values replaced, in the
document and in the gold alike, by

- swap: the value of the same attribute from another product (same category when possible), so
  a value is right only in the context of its document; or
- mutate: the same value with letters and digits redrawn (same case, same shape: "YA24a" ->
  "QK71c", "55mm" -> "83xq"), a string no list could hold, so only copying gets it right; or
- phrase: as many words, in a row, from another product's title of the same category ("Dark
  Chocolate" -> "Sea Salt"): real words that need not be any value of the attribute. Mutated
  strings split into letter-sized tokens; unseen real values (half of OA-Mine dev) are ordinary
  subwords, which only this teaches to copy without having seen them as values.

The substitution is applied at word boundaries to every text field and to every gold form, so gold
values that contained the old value stay verbatim in the new document. Records stay raw dicts in
the data README's format (``target_scores`` of oa-mine/ae-110k or wdc-pave).
"""

from __future__ import annotations

import copy
import random
import re
import string
from collections import defaultdict
from dataclasses import dataclass

from extraction.domain import NA

TEXT_FIELDS = ("input", "input_title", "input_description")


@dataclass(frozen=True)
class AugmentConfig:
    """Probabilities of the copy augmentation (per product, then per attribute)."""

    p_product: float = 0.5  # a drawn product is augmented at all
    p_attribute: float = 0.6  # each of its present values is replaced
    p_mutate: float = 0.4  # a replacement is a mutated string rather than another product's value
    p_phrase: float = 0.0  # a replacement that is not mutated is a title phrase rather than a value


def first_form(forms: dict) -> str | None:
    """The value a model should write: the first accepted form, None for n/a."""
    for form in forms:
        return None if form == NA else form
    return None


def value_pools(records: list[dict]) -> dict[tuple[str, str], list[str]]:
    """(category, attribute) -> distinct present values, and ("", attribute) across categories."""
    pools: dict[tuple[str, str], set[str]] = defaultdict(set)
    for record in records:
        for attr, forms in record.get("target_scores", {}).items():
            value = first_form(forms)
            if value:
                pools[(record.get("category", ""), attr)].add(value)
                pools[("", attr)].add(value)
    return {key: sorted(values) for key, values in pools.items()}


_EDGE = ",;:()[]{}\"'|/"  # stripped from the ends of title words


def phrase_pool(records: list[dict]) -> dict[str, list[list[str]]]:
    """category -> the words of each of its records' titles (or inputs), for phrase replacements."""
    pool: dict[str, list[list[str]]] = defaultdict(list)
    for record in records:
        title = record.get("input_title") or record.get("input") or ""
        words = [w.strip(_EDGE) for w in title.split()]
        words = [w for w in words if w]
        if words:
            pool[record.get("category", "")].append(words)
    return dict(pool)


def phrase(value: str, phrases: list[list[str]], rng: random.Random) -> str | None:
    """As many words in a row as ``value`` has, from a random title of ``phrases``; None when no
    draw (a few tries) gives a different phrase."""
    n = len(value.split())
    for _ in range(8 if phrases else 0):
        words = rng.choice(phrases)
        if len(words) < n:
            continue
        start = rng.randrange(len(words) - n + 1)
        out = " ".join(words[start : start + n])
        if out != value and out[:1].isalnum() and out[-1:].isalnum():
            return out
    return None


def mutate(value: str, rng: random.Random) -> str:
    """Redraw letters and digits of ``value`` keeping case and shape; never returns ``value``."""
    rate = rng.uniform(0.4, 1.0)
    for _ in range(8):
        chars = []
        for ch in value:
            if rng.random() >= rate:
                chars.append(ch)
            elif ch.isdigit():
                chars.append(rng.choice(string.digits))
            elif ch.isupper():
                chars.append(rng.choice(string.ascii_uppercase))
            elif ch.islower():
                chars.append(rng.choice(string.ascii_lowercase))
            else:
                chars.append(ch)
        out = "".join(chars)
        if out != value:
            return out
    return value + rng.choice(string.ascii_lowercase)


def _pattern(value: str) -> re.Pattern[str]:
    left = r"(?<!\w)" if value[:1].isalnum() else ""
    right = r"(?!\w)" if value[-1:].isalnum() else ""
    return re.compile(left + re.escape(value) + right)


def _texts(record: dict) -> list[str]:
    return [record[f] for f in TEXT_FIELDS if isinstance(record.get(f), str)]


def substitute(record: dict, old: str, new: str) -> dict | None:
    """Replace ``old`` by ``new`` in the document and in every gold form; None if ``old`` is not
    in the document at word boundaries."""
    pattern = _pattern(old)
    if not any(pattern.search(text) for text in _texts(record)):
        return None
    out = copy.deepcopy(record)
    for f in TEXT_FIELDS:
        if isinstance(out.get(f), str):
            out[f] = pattern.sub(lambda _m: new, out[f])
    scores = {}
    for attr, forms in out.get("target_scores", {}).items():
        new_forms = {}
        for form, payload in forms.items():
            key = form if form == NA else pattern.sub(lambda _m: new, form)
            new_forms.setdefault(key, payload)
        scores[attr] = new_forms
    out["target_scores"] = scores
    return out


def _verbatim(record: dict) -> set[str]:
    doc = "\n".join(_texts(record))
    return {v for forms in record.get("target_scores", {}).values() if (v := first_form(forms)) and v in doc}


def augment_record(
    record: dict,
    pools: dict[tuple[str, str], list[str]],
    rng: random.Random,
    cfg: AugmentConfig,
    phrases: dict[str, list[list[str]]] | None = None,
) -> dict:
    """A copy-augmented variant of ``record`` (the record itself when nothing applied).
    ``phrases`` (phrase_pool of the data set) is needed for cfg.p_phrase > 0."""
    if rng.random() >= cfg.p_product:
        return record
    out = record
    category = record.get("category", "")
    for attr in sorted(record.get("target_scores", {})):
        old = first_form(out["target_scores"].get(attr, {}))
        if not old or rng.random() >= cfg.p_attribute:
            continue
        if rng.random() < cfg.p_mutate:
            new = mutate(old, rng)
        elif cfg.p_phrase > 0 and phrases and rng.random() < cfg.p_phrase:
            # (no draw at all when p_phrase is 0: recipes without phrases replay unchanged)
            drawn = phrase(old, phrases.get(category) or [], rng)
            if drawn is None:
                continue
            new = drawn
        else:
            pool = pools.get((category, attr)) or []
            if len(pool) < 3:
                pool = pools.get(("", attr)) or []
            choices = [v for v in pool if v != old]
            if not choices:
                continue
            new = rng.choice(choices)
        before = _verbatim(out)
        candidate = substitute(out, old, new)
        if candidate is None:
            continue
        # keep the swap only if every value that was verbatim (old one renamed) still is
        pattern, repl = _pattern(old), new
        expected = {repl if v == old else pattern.sub(lambda _m, r=repl: r, v) for v in before}
        if expected <= _verbatim(candidate):
            out = candidate
    return out
