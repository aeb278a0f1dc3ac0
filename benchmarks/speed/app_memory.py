"""Resident memory of the real app (``python app.py``, default models) idle, answering and building.

Imports the prebuilt conv-26 memory into a fresh data folder, starts ``app.py`` on it and samples the
app process's ``/proc/PID/smaps_rollup`` (Rss; Pss, which counts the model file mapped by two llama.cpp
contexts once; Pss_Anon, the process's own memory without mapped files) every half second through
three phases, driven by ``gradio_client``:
1. idle: the models loaded (a three-message build), then 10 s of nothing;
2. answering: ``--questions`` conv-26 questions through ``/memory_ask`` on the imported memory;
3. building: conv-26 uploaded and built live (Structured Interaction Memory), sampled for at most
   ``--build-seconds``; 4. corefacts: when the build finished, its CoreFact extraction (llama.cpp gives
   it a context of its own), sampled for at most ``--facts-seconds``.
The phase's peak of each figure is reported with the back-end that ran (the page's model line) and
the host's CPU (``lscpu``). ``--env KEY=VALUE`` is passed to the app, e.g. ``GGML_BACKEND_PATH=/nowhere``
makes llama.cpp's probe fail, so the app runs on the transformers fallback as a user would get it.

    PYTHONPATH=. python benchmarks/speed/app_memory.py [--env GGML_BACKEND_PATH=/nowhere] --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from gradio_client import Client, handle_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llamacpp_builds import lscpu
from sharing import wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "assets" / "locomo-conv-26.json"
EXAMPLE_MEMORY = ROOT / "assets" / "example-memory-conv-26.json.gz"
QUESTIONS = ["What did Caroline research?", "When did Melanie paint a sunrise?",
             "What is Caroline's identity?", "Where did Caroline move from 4 years ago?",
             "What activities does Melanie partake in?"]


def rollup(pid: int) -> dict[str, float]:
    """Rss, Pss and Pss_Anon of ``pid`` in MiB. Pss counts a page mapped twice in the process (the
    model file under llama.cpp's two contexts) once; Rss counts it twice."""
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Rss", "Pss", "Pss_Anon"):
            out[key] = int(value.split()[0]) / 1024
    return out


class Sampler(threading.Thread):
    """Samples ``rollup(pid)`` every half second; ``phase`` names the bucket each sample goes to."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.phase, self.peaks, self.stop = pid, "loading", {}, False

    def run(self) -> None:
        while not self.stop:
            try:
                now = rollup(self.pid)
            except OSError:
                return
            peak = self.peaks.setdefault(self.phase, {"Rss": 0.0, "Pss": 0.0, "Pss_Anon": 0.0})
            for key, value in now.items():
                peak[key] = max(peak[key], value)
            time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=7897)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the app's environment")
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--build-seconds", type=float, default=900)
    ap.add_argument("--facts-seconds", type=float, default=180)
    ap.add_argument("--out")
    args = ap.parse_args()
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", args.port)) == 0:
            sys.exit(f"port {args.port} is in use")
    data = tempfile.mkdtemp(prefix="memsif-appmem-")
    extra = dict(item.split("=", 1) for item in args.env)
    env = {**os.environ, "MEMSIF_DATA_DIR": data, "GRADIO_SERVER_PORT": str(args.port), **extra}
    subprocess.run([sys.executable, "-m", "memsif", "import", str(EXAMPLE_MEMORY), "--namespace", "conv-26",
                    "--data-dir", data], check=True, env=env, cwd=ROOT, capture_output=True)
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(Path(data) / "app.log", "w"))
    sampler = Sampler(proc.pid)
    sampler.start()
    result: dict = {"date": time.strftime("%Y-%m-%d"), "host": lscpu(), "env": extra,
                    "command": "PYTHONPATH=. python benchmarks/speed/app_memory.py " + " ".join(sys.argv[1:])}
    try:
        url = f"http://127.0.0.1:{args.port}/"
        wait_for(url, proc)
        client = Client(url, verbose=False)
        small = Path(data) / "small.txt"
        small.write_text("## 1 June 2024\nMia: My bike is red.\nTom: Nice bike!\nMia: I ride it to work.\n")
        start = time.perf_counter()
        summary, *_ = client.predict(handle_file(str(small)), None, api_name="/build")
        result["models_loaded_and_small_build_s"] = round(time.perf_counter() - start, 1)
        result["build_summary_warning"] = "not llama.cpp" in summary
        sampler.phase = "idle"
        time.sleep(10)
        sampler.phase = "answering"
        start = time.perf_counter()
        answers = [client.predict("conv-26", q, "", api_name="/memory_ask") for q in QUESTIONS[:args.questions]]
        result["answer_s_mean"] = round((time.perf_counter() - start) / max(len(answers), 1), 1)
        result["answer_backend"] = json.loads(answers[0]).get("backend")
        sampler.phase = "building"
        start = time.perf_counter()
        job = client.submit(handle_file(str(EXAMPLE)), None, api_name="/build")
        while not job.done() and time.perf_counter() - start < args.build_seconds:
            time.sleep(1)
        result["build_s"] = round(time.perf_counter() - start, 1)
        result["build_finished"] = job.done()
        if job.done():  # the page chains CoreFact extraction after a build; a client calls it
            sampler.phase = "corefacts"
            start = time.perf_counter()
            facts = client.submit(api_name="/build_facts")
            while not facts.done() and time.perf_counter() - start < args.facts_seconds:
                time.sleep(1)
            result["corefacts_s"] = round(time.perf_counter() - start, 1)
    finally:
        sampler.stop = True
        proc.terminate()
        proc.wait(timeout=60)
    log = (Path(data) / "app.log").read_text()
    result["fell_back"] = "using transformers instead" in log
    result["peaks_mib"] = {phase: {k: round(v) for k, v in peak.items()} for phase, peak in sampler.peaks.items()}
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
