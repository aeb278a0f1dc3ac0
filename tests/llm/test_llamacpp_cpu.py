"""llama.cpp on every CPU: the CPU library chosen at run time with AMX left out, the probe's words for
a child that dies, the build options requirements.txt pins, and the fallback said wherever the model
is named. The last test loads the default model the way the app does and fails where it does not run
on llama.cpp."""

import re
import shlex
import sys
from pathlib import Path

import pytest

from memsif.config import MemSIFConfig
from memsif.errors import LLMError
from memsif.llm import Runtime, runtime_of
from memsif.llm.llamacpp_backend import _probe
from memsif.llm.llamacpp_cpu import (
    AMX_LIBRARIES,
    BUILD_OPTIONS,
    LLAMA_CPP_VERSION,
    CpuLibrary,
    choose_cpu_library,
    describe_exit,
    rebuild_command,
)
from tests import ROOT
from tests.fakes import FakeLLM

#: ggml_backend_score of each CPU library as measured on an AMD EPYC (AVX-512, VNNI, BF16), with the
#: AMX library's score as an Intel Xeon that advertises AMX gives it (zen4's features + 2^11).
XEON_AMX = {"x64": 1, "sse42": 5, "sandybridge": 21, "haswell": 64, "skylakex": 192, "icelake": 1472,
            "cooperlake": 1728, "zen4": 1984, "alderlake": 0, "sapphirerapids": 4032}


def _library_folder(tmp_path: Path, names) -> Path:
    for name in names:
        (tmp_path / f"libggml-cpu-{name}.so").write_bytes(b"")
    (tmp_path / "libggml-base.so").write_bytes(b"")
    return tmp_path


def test_the_best_library_without_amx_is_chosen_and_handed_to_llama_cpp(tmp_path):
    folder = _library_folder(tmp_path, XEON_AMX)
    env: dict[str, str] = {}
    chosen = choose_cpu_library(folder, env, scorer=lambda _d, path: XEON_AMX[path.name[12:-3]])
    assert chosen.kind == "variants" and chosen.name == "zen4" and chosen.chosen_by == "score"
    assert env["GGML_BACKEND_PATH"] == str(folder / "libggml-cpu-zen4.so")
    assert chosen.left_out == ("sapphirerapids",) and set(AMX_LIBRARIES) == {"sapphirerapids"}
    assert chosen.describe() == "CPU library zen4 (of 10, chosen at run time)"


def test_a_host_with_avx2_only_gets_the_avx2_library(tmp_path):
    scores = {"x64": 1, "sse42": 3, "haswell": 125, "skylakex": 0, "zen4": 0, "sapphirerapids": 0}
    env: dict[str, str] = {}
    chosen = choose_cpu_library(_library_folder(tmp_path, scores), env,
                                scorer=lambda _d, path: scores[path.name[12:-3]])
    assert chosen.name == "haswell" and env["GGML_BACKEND_PATH"].endswith("libggml-cpu-haswell.so")
    assert chosen.left_out == ()


def test_a_library_the_user_named_is_kept(tmp_path):
    folder = _library_folder(tmp_path, XEON_AMX)
    env = {"GGML_BACKEND_PATH": str(folder / "libggml-cpu-sapphirerapids.so")}
    chosen = choose_cpu_library(folder, env, scorer=lambda _d, path: XEON_AMX[path.name[12:-3]])
    assert chosen.name == "sapphirerapids" and chosen.chosen_by == "GGML_BACKEND_PATH"
    assert env["GGML_BACKEND_PATH"].endswith("sapphirerapids.so")
    assert "set by GGML_BACKEND_PATH" in chosen.describe()


def test_a_single_library_build_is_left_alone_and_a_cpu_too_old_is_an_error(tmp_path):
    env: dict[str, str] = {}
    single = choose_cpu_library(tmp_path, env, scorer=lambda *_: pytest.fail("nothing to score"))
    assert single.kind == "single" and env == {}
    (tmp_path / "v").mkdir()
    folder = _library_folder(tmp_path / "v", ["haswell", "zen4"])
    with pytest.raises(FileNotFoundError, match="runs on this CPU"):
        choose_cpu_library(folder, env, scorer=lambda *_: 0)


def _fake_child(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.mark.parametrize(("code", "named", "cause"), [
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "killed by SIGSEGV", "AMX"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGILL)", "killed by SIGILL", "CPU instructions this machine"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL", "memory"),
    ("import sys; sys.stderr.write('llama_model_load: error loading model: bad magic'); sys.exit(1)",
     "exited with status 1", "refused the model"),
])
def test_the_probe_names_the_signal_the_cause_and_the_rebuild_command(code, named, cause, tmp_path):
    with pytest.raises(LLMError) as caught:
        _probe(str(tmp_path / "model.gguf"), command=_fake_child(code))
    said = str(caught.value)
    assert named in said and cause in said and rebuild_command() in said
    assert "MEMSIF_LLM_BACKEND=transformers" in said
    if "bad magic" in code:
        assert "It said: llama_model_load: error loading model: bad magic" in said


def test_a_missing_python_package_is_named_with_the_install_command(tmp_path):
    with pytest.raises(LLMError) as caught:
        _probe(str(tmp_path / "model.gguf"), command=_fake_child("import diskcache_not_there"))
    assert "a Python package llama-cpp-python needs is missing" in str(caught.value)
    assert "No module named 'diskcache_not_there'" in str(caught.value)
    assert str(caught.value).endswith("Fix: pip install -r requirements.txt")


def test_the_probe_explains_a_timeout(tmp_path):
    with pytest.raises(LLMError) as caught:
        _probe(str(tmp_path / "model.gguf"), timeout_s=0.5, command=_fake_child("import time; time.sleep(30)"))
    assert "did not finish loading the model and reading a 129-token prompt in 0.5 s" in str(caught.value)
    assert rebuild_command() in str(caught.value)


def test_a_backend_path_to_no_file_is_said_and_the_library_run_is_named(tmp_path):
    missing = CpuLibrary("variants", "x", str(tmp_path / "libggml-cpu-x.so"), "GGML_BACKEND_PATH", {"zen4": 1984})
    said = describe_exit(1, "ValueError: Failed to load model from file", "m.gguf", cpu=missing)
    assert f"GGML_BACKEND_PATH names {tmp_path / 'libggml-cpu-x.so'}, which is not a file" in said
    there = tmp_path / "libggml-cpu-zen4.so"
    there.write_bytes(b"")
    said = describe_exit(-11, "", "m.gguf", cpu=CpuLibrary("variants", "zen4", str(there), "score", {"zen4": 1984}))
    assert "it ran the CPU library zen4 (of 1, chosen at run time)" in said


def test_a_shell_style_exit_status_is_read_as_its_signal():
    assert "killed by SIGSEGV (exit status 139)" in describe_exit(139, "", "m.gguf")
    assert "killed by SIGILL (exit status -4)" in describe_exit(-4, "", "m.gguf")


def test_requirements_build_llama_cpp_with_the_options_the_rebuild_command_names():
    lines = [line for line in (ROOT / "requirements.txt").read_text().replace("\\\n", " ").splitlines()
             if line.startswith("llama-cpp-python")]
    assert len(lines) == 1, "llama-cpp-python must be pinned on one requirement line"
    words = shlex.split(lines[0])
    assert words[0] == f"llama-cpp-python=={LLAMA_CPP_VERSION}"
    given = dict(re.fullmatch(r"--config-settings=cmake\.define\.([\w:]+)=(.+)", w).groups() for w in words[1:])
    assert given == BUILD_OPTIONS
    assert all(f"cmake.define.{k}={v}" in rebuild_command() for k, v in BUILD_OPTIONS.items())


FALLBACK = Runtime("transformers", "bfloat16 on cpu", fallback_from="llama.cpp",
                   reason="llama.cpp cannot run m.gguf: a test evaluation in a child process was killed by SIGSEGV.",
                   cost="about 4 GB instead of 2.", fix=rebuild_command())


def test_load_llm_falls_back_to_transformers_and_says_why(monkeypatch, tmp_path):
    from memsif import llm as llm_module
    from memsif.llm import llamacpp_backend, transformers_backend

    def dies(config):
        raise LLMError("llama.cpp cannot run m.gguf: a test evaluation in a child process was killed by SIGSEGV.")

    stand_in = FakeLLM()
    stand_in.runtime = Runtime("transformers", "bfloat16 on cpu")
    monkeypatch.setattr(llamacpp_backend.LlamaCppLLM, "from_config", staticmethod(dies))
    monkeypatch.setattr(transformers_backend.TransformersLLM, "from_config", staticmethod(lambda config: stand_in))
    monkeypatch.setattr(llm_module, "_CACHE", {})
    loaded = llm_module.load_llm(MemSIFConfig(cache_dir=str(tmp_path)))
    runtime = runtime_of(loaded)
    assert runtime.backend == "transformers" and runtime.fallback_from == "llama.cpp"
    assert "SIGSEGV" in runtime.reason and runtime.fix == rebuild_command() and runtime.cost
    assert runtime.line() == "transformers · bfloat16 on cpu (fallback: llama.cpp cannot run here)"
    with pytest.raises(LLMError, match="SIGSEGV"):  # a back-end asked for by name never falls back
        llm_module.load_llm(MemSIFConfig(cache_dir=str(tmp_path / "b"), llm_backend="llamacpp"))


def test_the_fallback_is_said_in_the_build_summary_the_chat_and_the_settings_line(engine_factory, monkeypatch,
                                                                                  tmp_path):
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector, model_in_use
    from memsif.viz import answer_markdown

    llm = FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5, "sufficiency": 0.9, "answer": "Red."})
    llm.runtime = FALLBACK
    engine = engine_factory(llm=llm)
    chat = tmp_path / "bike.txt"
    chat.write_text("## 1 June 2024\nMia: My bike is red.\nTom: Nice bike!\n")
    *_, (ns, _source, summary, _fig, _rows) = list(BuildTab(Inspector(engine)).build(
        str(chat), None, "ui-fallback", None, None, progress=lambda *a, **k: None))
    assert "⚠️ **The model runs on transformers, not llama.cpp**" in summary and rebuild_command() in summary
    answer = engine.ask("What colour is Mia's bike?", namespace=ns)
    assert answer.backend == FALLBACK.line() and answer.backend_warning == FALLBACK.warning()
    shown = answer_markdown(answer)
    assert "(fallback: llama.cpp cannot run here)" in shown and "killed by SIGSEGV" in shown
    assert "Fix: `pip install" in model_in_use(engine)


def test_the_warning_shows_the_childs_stderr_as_written():
    said = 'It said: File "<string>", line 2, in <module> ValueError: Failed to load model q4_k_m.gguf'
    warning = Runtime("transformers", fallback_from="llama.cpp", reason=said, cost="more.", fix="pip x").warning()
    assert "<module>" not in warning and "&lt;module&gt;" in warning and r"q4\_k\_m.gguf" in warning


def test_the_configured_back_end_runs_without_a_warning(engine_factory):
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}))
    assert runtime_of(engine.llm).warning() == ""


@pytest.mark.integration
def test_the_default_model_runs_on_llama_cpp_here():
    """Loaded as the app loads it (the environment's configuration, ``load_llm``): on llama.cpp with a
    CPU library chosen at run time, never the transformers fallback. Fails CI on a host where the
    README's install gives no working llama.cpp."""
    from memsif.llm import load_llm

    llm = load_llm(MemSIFConfig.from_env())
    runtime = runtime_of(llm)
    assert runtime.backend == "llama.cpp", f"the default model fell back: {runtime.reason}"
    assert llm.cpu.kind == "variants", "llama-cpp-python was not built with requirements.txt's options"
    assert llm.cpu.name not in AMX_LIBRARIES
    assert 0.0 < llm.yes_probability([llm_prompt()])[0] < 1.0


def llm_prompt():
    from memsif.prompts import Prompt

    return Prompt("x", "v", "Is Paris in France? Answer yes or no.")


def test_a_space_installs_the_cpu_build_of_the_torch_that_requirements_pin():
    """pre-requirements.txt (installed before requirements.txt on a Hugging Face Space) takes PyTorch's
    CPU build of the very version requirements.txt pins, from PyTorch's CPU index, so requirements.txt's
    pin is met and PyPI's CUDA build is never fetched."""
    from packaging.requirements import Requirement

    def pins(name: str) -> dict[str, str]:
        lines = [line.strip() for line in (ROOT / name).read_text().splitlines()]
        return {(r := Requirement(line.split()[0])).name: str(r.specifier) for line in lines
                if line and not line.startswith(("#", "-"))}

    pre_lines = (ROOT / "pre-requirements.txt").read_text().splitlines()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pre_lines
    version = pins("requirements.txt")["torch"].removeprefix("==")
    assert pins("pre-requirements.txt") == {"torch": f"=={version}+cpu"}


def test_the_probe_gives_the_prompt_speed_its_child_measured(tmp_path):
    """The first estimate of a prompt's wait, before the process has read one (``memsif.llm.Reading``)."""
    from memsif.llm import llamacpp_backend

    said = str(tmp_path / "said.gguf")
    assert _probe(said, command=_fake_child("print('prompt_tokens_per_s 80.5')")) == 80.5
    assert llamacpp_backend._PROBED[said] == 80.5, "kept for the next load of the same model"
    assert _probe(str(tmp_path / "silent.gguf"), command=_fake_child("pass")) is None
