"""Benchmark: several sessions on the one model of the real app (default models, 2 CPU cores).

Starts ``app.py``, then through ``gradio_client`` (one client = one browser session) measures:
1. one session's Structured Interaction Memory build of the bundled conv-26, alone (uploaded, so it is
   built live: Build without a file imports its prebuilt memory in seconds);
2. two sessions building it at the same time (fair sharing: each should take about twice the
   solo time, and both finish close together, instead of one waiting for the other);
3. a build started while another session's CoreFacts are being extracted (builds go first: it
   should take about its solo time), with a chat answer timed meanwhile.
Figures, not pass/fail.

    python benchmarks/speed/sharing.py [--port 7898]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from gradio_client import Client, handle_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "assets" / "locomo-conv-26.json"


def wait_for(url: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    start = time.time()
    while time.time() - start < timeout:
        if proc.poll() is not None:
            sys.exit("app.py exited before serving")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(1)
    sys.exit("app.py did not answer")


def timed_build(client: Client) -> tuple[float, float]:
    """(start, end) wall clock of one /build of the bundled example, uploaded (built live)."""
    start = time.perf_counter()
    job = client.submit(handle_file(str(EXAMPLE)), None, api_name="/build")
    job.result()
    return start, time.perf_counter()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=7898)
    args = ap.parse_args()
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", args.port)) == 0:
            sys.exit(f"port {args.port} is in use")
    data = tempfile.mkdtemp(prefix="memsif-sharing-")
    env = {**os.environ, "MEMSIF_DATA_DIR": data, "GRADIO_SERVER_PORT": str(args.port),
           "TRANSFORMERS_VERBOSITY": "error"}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{args.port}/"
    try:
        wait_for(url, proc)
        warm = Client(url, verbose=False)
        small = handle_file(str(ROOT / "tests" / "data" / "garden-chat.txt"))
        warm.predict(small, None, api_name="/build")  # loads the models
        a, b, c = (Client(url, verbose=False) for _ in range(3))
        s0, e0 = timed_build(a)
        solo = e0 - s0
        print(f"| case | seconds | × solo |\n|---|---|---|\n| conv-26 SIM build, alone | {solo:.1f} | 1.00 |")
        jobs = []
        for client in (b, c):
            jobs.append((time.perf_counter(), client.submit(handle_file(str(EXAMPLE)), None, api_name="/build")))
        ends = []
        for start, job in jobs:
            job.result()
            ends.append(time.perf_counter() - start)
        for k, t in enumerate(ends, 1):
            print(f"| two builds at once: session {k} | {t:.1f} | {t / solo:.2f} |")
        facts = a.submit(api_name="/build_facts")
        time.sleep(20)  # extraction under way
        d = Client(url, verbose=False)  # a new session: it builds conv-26 anew
        build_start = time.perf_counter()
        d_job = d.submit(handle_file(str(EXAMPLE)), None, api_name="/build")
        t_ask = time.perf_counter()
        a.predict("What did Caroline research?", [], False, api_name="/ask")
        asked = time.perf_counter() - t_ask
        d_job.result()
        during = time.perf_counter() - build_start
        print(f"| build while another session's CoreFacts are extracted | {during:.1f} | {during / solo:.2f} |")
        print(f"| chat answer meanwhile (retrieval + sufficiency + answer) | {asked:.1f} | – |")
        facts.cancel()
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
