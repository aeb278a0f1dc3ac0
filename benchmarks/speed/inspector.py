"""Inspector figures on the real app and models, in headless Chromium (Debian's chromium + chromium-driver).

Prints: seconds from process start to a usable page; seconds from the models being loaded to the page
saying so; seconds from clicking Build with no file (the bundled example, imported from its prebuilt
memory) to its summary and drawn φ timeline (target: 10 s); seconds from clicking Build
(uploaded LoCoMo conv-26) to a drawn φ timeline; time to first answer; the answer time of a second session that chats
while the first one builds (then four more questions on two topics feed the ActiveFacts view); and,
with --wait-facts, seconds until CoreFacts are filled in. Saves a screenshot of every tab to --shots.

    python benchmarks/speed/inspector.py --shots assets/screenshots [--wait-facts]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "assets" / "locomo-conv-26.json"
SMALL = ROOT / "tests" / "data" / "garden-chat.txt"


def browser() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--window-size=1400,1700"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def tab(driver, name: str) -> None:
    next(t for t in driver.find_elements(By.CSS_SELECTOR, "button[role='tab']") if t.text.strip() == name).click()
    time.sleep(1.5)


def body(driver) -> str:
    return driver.find_element(By.TAG_NAME, "body").text


def drawn(driver, elem_id: str) -> bool:
    return bool(driver.find_elements(By.CSS_SELECTOR, f"#{elem_id} .js-plotly-plot .scatterlayer .trace, "
                                                      f"#{elem_id} .js-plotly-plot .gl-container canvas"))


def build(driver, path: Path, timeout: float) -> float:
    driver.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(path))
    time.sleep(2)
    start = time.perf_counter()
    driver.find_element(By.ID, "build-btn").click()
    WebDriverWait(driver, timeout).until(lambda d: "Topical Segments" in d.find_element(By.ID, "build-summary").text
                                         and drawn(d, "timeline"))
    return time.perf_counter() - start


def ask(driver, question: str, timeout: float = 300) -> tuple[float, float]:
    """(seconds until the answer shows, seconds the engine spent on it per the trace title)."""
    tab(driver, "Chat")
    before = body(driver).count("Trace ·")
    start = time.perf_counter()
    driver.find_element(By.CSS_SELECTOR, "#question textarea").send_keys(question, Keys.ENTER)
    WebDriverWait(driver, timeout).until(lambda d: body(d).count("Trace ·") > before)
    shown = time.perf_counter() - start
    titles = [line for line in body(driver).splitlines() if line.startswith("Trace ·")]
    engine_s = float(titles[-1].rsplit("·", 1)[1].strip().rstrip("s")) if titles else float("nan")
    print(f"{question!r}: {titles[-1] if titles else '(no trace)'}", file=sys.stderr)
    return shown, engine_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shots", type=Path, default=ROOT / "assets" / "screenshots")
    ap.add_argument("--wait-facts", action="store_true", help="wait for the CoreFacts of conv-26 (minutes)")
    ap.add_argument("--port", type=int, default=7899)
    args = ap.parse_args()
    args.shots.mkdir(parents=True, exist_ok=True)
    figures: dict[str, float] = {}
    data = tempfile.mkdtemp(prefix="memsif-inspector-")
    env = {**os.environ, "MEMSIF_DATA_DIR": data, "GRADIO_SERVER_PORT": str(args.port),
           "GRADIO_ANALYTICS_ENABLED": "False"}
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", args.port)) == 0:
            sys.exit(f"port {args.port} is taken; pass --port")
    start = time.perf_counter()
    app = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{args.port}/"
    first = second = None
    try:
        while True:
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        first = browser()
        first.get(url)
        WebDriverWait(first, 60).until(lambda d: d.find_elements(By.ID, "build-btn"))
        figures["page_usable_s"] = time.perf_counter() - start
        visitor = browser()  # a session of its own: the sessions below keep their own memories
        try:
            visitor.get(url)
            WebDriverWait(visitor, 300).until(
                lambda d: "Models loaded" in d.find_element(By.ID, "models-status").text)
            figures["models_loaded_s"] = time.perf_counter() - start
            clicked = time.perf_counter()
            visitor.find_element(By.ID, "build-btn").click()
            WebDriverWait(visitor, 300).until(
                lambda d: "Topical Segments" in d.find_element(By.ID, "build-summary").text and drawn(d, "timeline"))
            figures["prebuilt_example_s"] = time.perf_counter() - clicked
            if "prebuilt example memory" not in visitor.find_element(By.ID, "build-summary").text:
                sys.exit("the example was built live, not imported from its prebuilt memory")
            visitor.save_screenshot(str(args.shots / "prebuilt-example.png"))
        finally:
            visitor.quit()

        # Session B gets a small memory first, then chats while session A builds conv-26.
        second = browser()
        second.get(url)
        WebDriverWait(second, 60).until(lambda d: d.find_elements(By.ID, "build-btn"))
        figures["small_build_s"] = build(second, SMALL, 300)
        figures["first_answer_s"], figures["first_answer_engine_s"] = ask(second, "Which tomato variety did Ana plant?")

        first.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(EXAMPLE))
        time.sleep(2)
        build_start = time.perf_counter()
        first.find_element(By.ID, "build-btn").click()
        time.sleep(5)
        figures["answer_during_other_build_s"], figures["answer_during_other_build_engine_s"] = ask(
            second, "When is Ben's flight to Lisbon?")
        WebDriverWait(first, 600).until(lambda d: "Topical Segments" in d.find_element(By.ID, "build-summary").text
                                        and drawn(d, "timeline"))
        figures["conv26_build_to_timeline_s"] = time.perf_counter() - build_start
        first.save_screenshot(str(args.shots / "sim-timeline.png"))
        figures["conv26_first_answer_s"], figures["conv26_first_answer_engine_s"] = ask(
            first, "What did Caroline research?")
        first.save_screenshot(str(args.shots / "chat-trace.png"))
        for question in ("What does Melanie make in her pottery class?", "Why does Melanie like pottery?",
                         "Where did Melanie go camping with her family?", "What does Melanie do when camping?"):
            ask(first, question)  # two topics about one person: the ActiveFact clusters should keep them apart
        tab(first, "Trajectories")
        WebDriverWait(first, 120).until(lambda d: drawn(d, "traj-graph"))
        first.save_screenshot(str(args.shots / "trajectories.png"))
        tab(first, "ActiveFacts")
        next(b for b in first.find_elements(By.TAG_NAME, "button") if b.text.strip() == "Refresh"
             and b.is_displayed()).click()
        time.sleep(3)
        cells = [c for c in first.find_elements(By.CSS_SELECTOR, "#clusters-table tbody tr td") if c.is_displayed()]
        if cells:  # the selected cluster's source messages
            first.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", cells[0])
            time.sleep(2)
            first.execute_script("window.scrollTo(0, 0);")
        first.save_screenshot(str(args.shots / "activefacts.png"))
        tab(first, "Settings")
        first.save_screenshot(str(args.shots / "settings.png"))
        tab(first, "CoreFacts")
        if args.wait_facts:
            WebDriverWait(first, 1800).until(lambda d: "current CoreFacts" in body(d))
            figures["conv26_build_to_corefacts_s"] = time.perf_counter() - build_start
        first.save_screenshot(str(args.shots / "corefacts.png"))
    finally:
        for driver in (first, second):
            if driver is not None:
                driver.quit()
        app.terminate()
        app.wait(30)
        shutil.rmtree(data, ignore_errors=True)
    print(json.dumps({k: round(v, 1) for k, v in figures.items()}, indent=2))


if __name__ == "__main__":
    main()
