"""Which llama.cpp CPU code runs on this host, and what to say when it cannot run.

``requirements.txt`` builds llama-cpp-python with ``BUILD_OPTIONS``: one CPU back-end library per
x86-64 level (``libggml-cpu-haswell.so`` … ``-zen4.so``, ``-sapphirerapids.so``) instead of one compiled
for the build host (``-march=native``). llama.cpp loads the highest-scoring library the CPU's cpuid
allows when it first needs a back-end. On Intel Xeon hosts whose virtual machine advertises AMX but
refuses it, that is the AMX library (sapphirerapids), which dies with SIGSEGV at ``ldtilecfg`` on its
first evaluation; a native build on such a host dies the same way. ``choose_cpu_library`` makes
llama.cpp's own choice (each library's ``ggml_backend_score``) with the AMX libraries left out and hands
it to llama.cpp through ``GGML_BACKEND_PATH``, which this process and its children (the probe, a
``llama_cpp.server``) read when they load their back-ends. A ``GGML_BACKEND_PATH`` set by the user
wins (e.g. the AMX library on a host that allows AMX). Another program on this build (a
``python -m llama_cpp.server`` of one's own) needs the same variable: ``export $(python -m
memsif.llm.llamacpp_cpu)`` sets it; without it llama.cpp finds no CPU library and says "no backends
are loaded".

``describe_exit`` turns a child's exit status into the sentence the probe raises: the signal by name,
its likely cause here and the rebuild command.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from memsif.llm.packaged import installed_package

#: The llama-cpp-python release requirements.txt pins.
LLAMA_CPP_VERSION = "0.3.36"

#: CMake options requirements.txt passes to llama-cpp-python's build (``--config-settings``), one
#: source of truth for the rebuild command (a test reads them back from requirements.txt):
#: - GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS: the CPU code is chosen at run time, so the installed
#:   library runs on any x86-64 host (the wheel pip caches can move to another host, a Space's image
#:   can be built on one CPU and run on another), with AVX-512, VNNI and BF16 code where the host has it;
#: - GGML_NATIVE=OFF: nothing compiled for the build host's own CPU;
#: - GGML_BACKEND_DIR: the variant libraries are installed beside libllama.so in the package (typed
#:   STRING: an untyped relative path becomes the build folder's absolute one, outside the wheel);
#: - LLAVA_BUILD=OFF: MemSIF needs no image model (shortens the build).
BUILD_OPTIONS = {"GGML_BACKEND_DL": "ON", "GGML_CPU_ALL_VARIANTS": "ON", "GGML_NATIVE": "OFF",
                 "GGML_BACKEND_DIR:STRING": "llama_cpp/lib", "LLAVA_BUILD": "OFF"}

#: CPU libraries compiled with AMX code (cmake's ``ggml_add_cpu_backend_variant(... AMX_TILE AMX_INT8)``):
#: never chosen automatically, since a VM may advertise AMX in cpuid and refuse it.
AMX_LIBRARIES = frozenset({"sapphirerapids"})

_VARIANT = re.compile(r"^libggml-cpu-(?P<name>[\w.]+)\.so$")


#: The command that installs what MemSIF needs, llama-cpp-python included.
INSTALL_COMMAND = "pip install -r requirements.txt"


def rebuild_command() -> str:
    """The pip command that rebuilds llama-cpp-python the way requirements.txt does (one line)."""
    settings = " ".join(f"--config-settings=cmake.define.{k}={v}" for k, v in BUILD_OPTIONS.items())
    return (f"pip install --no-cache-dir --force-reinstall --no-deps llama-cpp-python=={LLAMA_CPP_VERSION} "
            f"{settings}")


@dataclass(frozen=True)
class CpuLibrary:
    """The CPU code llama.cpp runs here.

    ``kind`` is "variants" (a build with one library per x86-64 level, chosen at run time), "single"
    (one library compiled at build time, e.g. ``-march=native``: runs only where its CPU features are
    allowed) or "none" (llama-cpp-python is not installed). ``name``: the chosen variant ("zen4"),
    ``path`` its file, ``chosen_by``: "score" (the best-scoring non-AMX library), "GGML_BACKEND_PATH"
    (set by the user). ``scores``: every variant's ``ggml_backend_score`` (0: this CPU lacks a feature
    it needs); ``left_out``: AMX libraries this CPU's cpuid would allow but MemSIF does not choose.
    """

    kind: str
    name: str = ""
    path: str = ""
    chosen_by: str = ""
    scores: dict[str, int] = field(default_factory=dict)
    left_out: tuple[str, ...] = ()

    def describe(self) -> str:
        """One phrase for the model line: "CPU library zen4 (of 14, chosen at run time)"."""
        if self.kind == "variants":
            how = "set by GGML_BACKEND_PATH" if self.chosen_by == "GGML_BACKEND_PATH" else "chosen at run time"
            return f"CPU library {self.name} (of {len(self.scores)}, {how})"
        if self.kind == "single":
            return "one CPU library compiled for the build host"
        return "not installed"


def llama_cpp_lib_dir() -> Path | None:
    """Folder of llama-cpp-python's shared libraries (``llama_cpp/lib``), or None when not installed."""
    folder = installed_package("llama_cpp")
    return folder / "lib" if folder else None


def variant_files(lib_dir: Path) -> dict[str, Path]:
    """``{variant: path}`` of the CPU libraries a run-time-selected build installed in ``lib_dir``."""
    return {match["name"]: path for path in sorted(lib_dir.glob("libggml-cpu-*.so"))
            if (match := _VARIANT.match(path.name))}


def library_score(lib_dir: Path, path: Path) -> int:
    """``ggml_backend_score()`` of one CPU library: 0 when this CPU's cpuid lacks a feature it was
    compiled for, else higher for more features (llama.cpp's own ranking). Loading a library runs
    none of its compute code, which is how llama.cpp itself ranks them."""
    ctypes.CDLL(str(lib_dir / "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
    score = ctypes.CDLL(str(path)).ggml_backend_score
    score.restype = ctypes.c_int
    return int(score())


def choose_cpu_library(lib_dir: Path | None = None, environ: MutableMapping[str, str] | None = None,
                       scorer: Callable[[Path, Path], int] = library_score) -> CpuLibrary:
    """Pick the CPU library llama.cpp will load and set ``GGML_BACKEND_PATH`` in ``environ`` (default
    ``os.environ``) to it; call before the first ``llama_cpp.Llama``. The best ``scorer`` score among
    the non-AMX libraries wins. A ``GGML_BACKEND_PATH`` already set is kept. A build without variant
    libraries ("single") is left as it is.

    Raises:
        FileNotFoundError: no CPU library scores above 0 (a CPU older than the oldest variant).
    """
    environ = os.environ if environ is None else environ
    lib_dir = lib_dir if lib_dir is not None else llama_cpp_lib_dir()
    if lib_dir is None:
        return CpuLibrary("none")
    files = variant_files(lib_dir) if lib_dir.is_dir() else {}
    if not files:
        return CpuLibrary("single", path=str(lib_dir))
    scores = {name: scorer(lib_dir, path) for name, path in files.items()}
    left_out = tuple(sorted(n for n in AMX_LIBRARIES if scores.get(n, 0) > 0))
    if user := environ.get("GGML_BACKEND_PATH"):
        name = next((n for n, p in files.items() if Path(user).name == p.name), Path(user).name)
        return CpuLibrary("variants", name, user, "GGML_BACKEND_PATH", scores, left_out)
    usable = {n: s for n, s in scores.items() if s > 0 and n not in AMX_LIBRARIES}
    if not usable:
        raise FileNotFoundError(f"none of llama.cpp's CPU libraries in {lib_dir} runs on this CPU "
                                f"(scores {scores})")
    best = max(usable, key=lambda n: usable[n])
    environ["GGML_BACKEND_PATH"] = str(files[best])
    return CpuLibrary("variants", best, str(files[best]), "score", scores, left_out)


def _signal_name(returncode: int) -> str | None:
    """SIGSEGV for -11 (subprocess's way) or 139 (a shell's 128 + 11); None for an ordinary exit."""
    number = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 160 else 0
    try:
        return signal.Signals(number).name if number else None
    except ValueError:
        return f"signal {number}"


#: Likely cause of each signal for a llama.cpp child on this project's hosts.
_CAUSES: Mapping[str, str] = {
    "SIGILL": "its build uses CPU instructions this machine does not have or refuses (a library compiled "
              "for another CPU, e.g. -march=native on a newer host; AMX tile code, which Intel Xeon virtual "
              "machines advertise and refuse)",
    "SIGSEGV": "its build uses CPU instructions this machine advertises but refuses — AMX on Intel Xeon "
               "virtual machines (a crash at ldtilecfg) — or the model file is damaged",
    "SIGKILL": "it was killed, most likely by the kernel for want of memory (the model needs about "
               "1.5 GB more than is free) or by a supervisor",
    "SIGBUS": "the memory-mapped model file changed or its disk is full",
    "SIGABRT": "llama.cpp stopped on an internal check (its last message above says which)",
}


def describe_exit(returncode: int | None, stderr: str, model_path: str, timeout_s: float | None = None,
                  cpu: CpuLibrary | None = None) -> str:
    """The probe's message for a llama.cpp child that failed (``probe_failure``'s reason and fix)."""
    reason, fix = probe_failure(returncode, stderr, model_path, timeout_s, cpu)
    return f"{reason} Fix: {fix}"


def probe_failure(returncode: int | None, stderr: str, model_path: str, timeout_s: float | None = None,
                  cpu: CpuLibrary | None = None) -> tuple[str, str]:
    """Why a llama.cpp child failed — how it ended (the signal by name, an exit status, or a timeout
    after ``timeout_s`` s), the likely cause, the CPU library it ran (``cpu``), the end of its stderr —
    and the command that fixes it. ``returncode`` is None for a timeout."""
    if returncode is None:
        how = f"did not finish loading the model and reading a 129-token prompt in {timeout_s:g} s"
        cause = ("the machine is overloaded or swapping, or the CPU library is emulating instructions; "
                 "check free memory and `top`")
    elif sig := _signal_name(returncode):
        how = f"was killed by {sig} (exit status {returncode})"
        cause = _CAUSES.get(sig, "an unexpected signal")
    else:
        how = f"exited with status {returncode}"
        cause = "llama.cpp refused the model or the library failed to load (its message below)"
    said = " ".join(stderr.strip().split())[-300:]
    if cpu is not None and cpu.kind == "variants":
        cause += f"; it ran the {cpu.describe()}"
        if not Path(cpu.path).is_file():
            cause = f"GGML_BACKEND_PATH names {cpu.path}, which is not a file: llama.cpp had no CPU library to load"
    if "ModuleNotFoundError" in stderr or "ImportError" in stderr:
        return (f"llama.cpp cannot run {model_path}: a test evaluation in a child process {how}: a Python "
                f"package llama-cpp-python needs is missing. It said: {said}", INSTALL_COMMAND)
    return (f"llama.cpp cannot run {model_path}: a test evaluation in a child process {how}. Likely cause: "
            f"{cause}.{f' It said: {said}' if said else ''} Rebuild llama-cpp-python the way requirements.txt "
            "does (CPU code chosen at run time, AMX left out), or run the transformers back-end instead "
            "(MEMSIF_LLM_BACKEND=transformers; slower, more memory).", rebuild_command())


if __name__ == "__main__":  # `export $(python -m memsif.llm.llamacpp_cpu)` before a llama_cpp.server of this build
    chosen = choose_cpu_library()
    print(f"GGML_BACKEND_PATH={chosen.path}" if chosen.kind == "variants" else f"# {chosen.describe()}")
