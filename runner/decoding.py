"""The worker's side of the engine: the Extractors a process loaded (within a memory budget), batches
of work items in, outcomes out.

Only worker processes import this module's engine parts (lazily, inside functions), so the web
process never imports torch. A product that makes the engine fail is retried alone and, if it fails
alone too, reported failed with the error; the other products of its batch are not affected.
"""

import gc
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from extraction import config
from extraction.engine.decode.stopping import Cancelled  # torch-free; the loop catches it from here
from extraction.engine.lru import BoundedLRU  # torch-free
from registry.cache import local_dir, version_id_of
from runner.leases import BatchTotals, ItemOutcome

log = logging.getLogger(__name__)

# Room for this many models the size of the last one loaded when no budget is set.
MODELS_KEPT_BY_DEFAULT = 2
MB = 1024 * 1024


@dataclass
class LoadedModel:
    extractor: object
    fingerprint: str  # of the files it loaded (engine/fingerprint.py): what a run checks
    nbytes: int  # its weights' bytes, what the budget counts


# Models this process loaded, keyed by (model dir, device), least recently used first: loading costs
# seconds, so they stay loaded, within settings.EXTRACTION_MODEL_CACHE_MB (model_budget_bytes).
_LOADED: BoundedLRU[LoadedModel] = BoundedLRU(0, lambda loaded: loaded.nbytes)
# When this process last failed to load a (model dir, device): it does not try again for a while.
_LOAD_FAILED_AT: dict[tuple[str, str], float] = {}


class LoadFailedRecently(RuntimeError):
    """This process failed to load the model moments ago; another worker may serve the run."""


class NoModelInstalled(RuntimeError):
    """The default model is not on this machine: a worker never decodes with random weights instead
    (the engine's random stand-in is for its own tests and CLI only)."""


class DocumentTooLong(ValueError):
    """The product's prompt needs more positions than the model was built for or a worker decodes."""


def extractor_for(model_dir: str, device: str):
    """The process-wide Extractor for a model directory ("" = the bundled model), loaded once and
    kept while the budget allows (the least recently used models are dropped first).

    A failed load is remembered: the same process tries that model again only after
    settings.EXTRACTION_LOAD_RETRY_SECONDS (LoadFailedRecently until then), so the reaper's wake-ups do not
    make it reload a broken model over and over while other workers could serve the run.
    """
    key = (model_dir, device)
    loaded = _LOADED.get(key)
    if loaded is not None:
        return loaded.extractor
    failed_at = _LOAD_FAILED_AT.get(key)
    if failed_at is not None and time.monotonic() - failed_at < settings.EXTRACTION_LOAD_RETRY_SECONDS:
        raise LoadFailedRecently(f"model {model_dir or '(bundled)'} failed to load here moments ago")
    # room for it before it loads, so old and new never sit in memory together beyond the budget
    # (versions of one base are one size: the newest model's size is the guess)
    _drop(_LOADED.make_room(_LOADED.newest_size()))
    try:
        loaded = _load(model_dir, device)
    except Exception:
        _LOAD_FAILED_AT[key] = time.monotonic()
        raise
    _LOADED.budget = model_budget_bytes(loaded.nbytes)
    _drop(_LOADED.put(key, loaded))
    _LOAD_FAILED_AT.pop(key, None)
    log.info(
        "models loaded in this process: %d, %d bytes of a %d-byte budget (%s)",
        len(_LOADED),
        _LOADED.total,
        _LOADED.budget,
        ", ".join(_label(k) for k in _LOADED.keys()),
    )
    return loaded.extractor


def _load(model_dir: str, device: str) -> LoadedModel:
    import torch

    from extraction.engine.api import Extractor
    from extraction.engine.modeling import model_bytes

    log.info(
        "loading model %s on %s (%d torch threads)", model_dir or "(bundled)", device, torch.get_num_threads()
    )
    directory = engine_model_dir(model_dir)
    prefix_mb = settings.EXTRACTION_PREFIX_CACHE_MB
    extractor = Extractor(
        model_dir=directory, device=device, prefix_cache_bytes=prefix_mb * MB if prefix_mb else None
    )
    return LoadedModel(extractor, loaded_fingerprint(extractor, directory), model_bytes(extractor.model))


def model_budget_bytes(model_nbytes: int) -> int:
    """Bytes of weights a process keeps loaded: settings.EXTRACTION_MODEL_CACHE_MB, else room for
    MODELS_KEPT_BY_DEFAULT models of `model_nbytes`."""
    configured = settings.EXTRACTION_MODEL_CACHE_MB
    return configured * MB if configured else MODELS_KEPT_BY_DEFAULT * model_nbytes


def _drop(evicted: list) -> None:
    """Free the memory of models dropped from the cache now, not at some later collection (the
    list held their last references)."""
    if not evicted:
        return
    dropped = [(key, loaded.nbytes) for key, loaded in evicted]
    evicted.clear()
    for key, nbytes in dropped:
        log.info(
            "dropped model %s (%d bytes), the least recently used, to stay within the budget",
            _label(key),
            nbytes,
        )
    gc.collect()
    if any(device.startswith("cuda") for (_, device), _ in dropped):
        import torch

        torch.cuda.empty_cache()  # hand the freed blocks back, for the model about to load


def _label(key: tuple[str, str]) -> str:
    model_dir, device = key
    return f"{model_dir or '(bundled)'} on {device}"


def fingerprint_for(model_dir: str, device: str) -> str:
    """The fingerprint of the copy of `model_dir` this process loaded (extractor_for loads it)."""
    return _LOADED.get((model_dir, device)).fingerprint


def loaded_fingerprint(extractor, directory: str) -> str:
    """The identity of what the Extractor loaded from `directory`: its files and the precision it
    decodes in."""
    from extraction.engine.fingerprint import model_fingerprint

    return model_fingerprint(Path(directory), str(extractor.torch_dtype).removeprefix("torch."))


def engine_model_dir(model_dir: str) -> str:
    """The directory the engine is handed for a run's model_dir. A stored version ("version:<id>")
    is this machine's cached copy of it (fetched from PostgreSQL once). The bundled model is
    settings.SLOTWISE_MODEL_DIR; while that holds no model, NoModelInstalled: the run page shows it
    as this worker's failed load, and the run fails once no worker could load it (failures.py)."""
    version_id = version_id_of(model_dir)
    if version_id is not None:
        return str(local_dir(version_id))  # a stored version, unpacked into this machine's cache
    if model_dir != config.BUNDLED:
        return model_dir
    configured = settings.SLOTWISE_MODEL_DIR
    if not config.has_model(Path(configured)):
        raise NoModelInstalled(config.no_model_message(configured))
    return configured


def attribute_specs(schema_id: int, sizes: dict[str, int] | None = None) -> list:
    """The engine's specs of a schema version's attributes; `sizes` (the run's, extraction/sizes.py)
    gives each attribute's token budget where the run recorded one, else its schema's."""
    from catalog.models import Attribute
    from extraction.engine.api import AttributeSpec

    # the catalog's types reach the engine: an enumeration decodes one of its allowed values, a
    # boolean yes / no, a number a number with a unit in the attribute's unit, a text a span of
    # the document unless the schema marks it free (engine constraints)
    return [
        AttributeSpec(
            a.name,
            a.description,
            (sizes or {}).get(a.name, a.max_tokens),
            kind=a.kind,
            unit=a.unit,
            allowed_values=tuple(str(v) for v in a.allowed_values or ()),
            free=a.free,
        )
        for a in Attribute.objects.filter(schema_id=schema_id).order_by("position", "id")
    ]


def prompt_positions(extractor, attributes: list, text: str) -> int:
    """Positions one document's prompt needs: prefix, document, keys and every value's gap."""
    from extraction.engine.layout import doc_ids

    schema = extractor.schema(attributes)
    document = len(doc_ids(extractor.tokenizer, text))
    return len(schema.prefix_ids) + document + sum(len(k) for k in schema.key_ids) + sum(schema.gaps) + 1


def check_fits(extractor, attributes: list, key: str, text: str) -> None:
    """Refuse a product whose prompt needs more positions than the model has, or than a worker
    decodes (settings.EXTRACTION_MAX_PROMPT_POSITIONS: attention's memory grows with the square)."""
    needed = prompt_positions(extractor, attributes, text)
    too_long = f"document too long: product {key} needs {needed} prompt positions"
    model_limit = getattr(extractor.model.config, "max_position_embeddings", None)
    if model_limit and needed > model_limit:
        raise DocumentTooLong(
            f"{too_long}, the model {extractor.model_name} has {model_limit}; shorten its description"
        )
    if needed > settings.EXTRACTION_MAX_PROMPT_POSITIONS:
        raise DocumentTooLong(
            f"{too_long}, a worker decodes at most {settings.EXTRACTION_MAX_PROMPT_POSITIONS} "
            "(EXTRACTION_MAX_PROMPT_POSITIONS); shorten its description"
        )


def _error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def extract_checked(extractor, docs: list, attributes: list, decoder: str, stack: int | None):
    """extractor.extract, refusing first any document whose prompt the model cannot hold."""
    for doc in docs:
        check_fits(extractor, attributes, doc.key, doc.text)
    return extractor.extract(docs, attributes, decoder=decoder, stack=stack)


def decode_items(extractor, items: list, attributes: list, decoder: str, stack: int | None, should_stop=None):
    """-> (outcomes in the order of items, totals) for leased items of one schema version.

    When the engine fails on a batch, the batch is split in halves and each half decoded again,
    down to single products: the products that fail alone are reported failed with the error,
    every other product of the batch still gets its values (a few extra engine calls, log2 deep).
    should_stop: asked between forward steps; when it says so, the engine's Cancelled comes out
    of here and nothing of the batch is kept (extraction.engine.decode.stopping).
    """
    from extraction.engine.api import Document
    from extraction.engine.decode.stopping import stop_between_forwards

    docs = [Document(key=item.product.sku, text=item.product.document) for item in items]
    totals = BatchTotals()
    with stop_between_forwards(extractor.model, should_stop):
        outcomes = _decode_or_split(
            extractor, list(zip(items, docs, strict=True)), attributes, decoder, stack, totals
        )
    return [outcomes[item.id] for item in items], totals


def _decode_or_split(extractor, pairs, attributes, decoder, stack, totals) -> dict[int, ItemOutcome]:
    docs = [doc for _, doc in pairs]
    try:
        results, stats = extract_checked(extractor, docs, attributes, decoder, stack if len(docs) > 1 else 1)
    except Cancelled:
        raise  # not a failure of the products: the run was cancelled
    except Exception as exc:  # noqa: BLE001 - the engine failing on one product must not stop the others
        if len(pairs) == 1:
            item, doc = pairs[0]
            log.warning("product %s failed alone: %s", doc.key, _error_text(exc))
            return {item.id: ItemOutcome(item.id, error=_error_text(exc))}
        log.warning(
            "batch of %d failed (%s); splitting it to isolate the product", len(pairs), _error_text(exc)
        )
        half = len(pairs) // 2
        outcomes = _decode_or_split(extractor, pairs[:half], attributes, decoder, stack, totals)
        outcomes.update(_decode_or_split(extractor, pairs[half:], attributes, decoder, stack, totals))
        return outcomes
    _add(totals, stats)
    return {
        item.id: ItemOutcome(item.id, values=values) for (item, _), values in zip(pairs, results, strict=True)
    }


def _add(totals: BatchTotals, stats) -> None:
    totals.forward_steps += int(stats.forward_steps)
    totals.tokens_decoded += int(stats.tokens_decoded)
    totals.seconds += float(stats.seconds)
