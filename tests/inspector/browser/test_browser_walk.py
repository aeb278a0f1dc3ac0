"""A first-time visitor's walk through the real app in headless Chromium, on the real packaged
models: a small LoCoMo file (sessions 1–2 of the bundled conv-26 with their questions) is built;
the notation is explained where it appears; CoreFacts appear while they are written, under one
progress display; a bad upload gets one message and the views stay; a chat answer comes first, its
trace and raw JSON folded, and a message it rests on opens in context; plots fill their width;
the Evaluate lens compares MemSIF with the flat baselines on the file's own questions; delete asks
for confirmation and empties the views. Screenshots go to ``$MEMSIF_SCREENSHOT_DIR`` when set.
"""

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests import DATA, ROOT
from tests.inspector.browser.helpers import (
    CHROMEDRIVER,
    CHROMIUM,
    open_browser,
    open_tab,
    pick_first,
    plot_drawn,
    start_app,
    text_of,
)

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                 reason="needs Debian's chromium and chromium-driver (apt-get install ...)")]


@pytest.fixture(scope="module")
def walk_url(tmp_path_factory):
    """The app extracting two CoreFact batches at a time: the small file's three batches are written in
    two waves (by default they would be generated together and written within a second of each other)."""
    yield from start_app(tmp_path_factory, MEMSIF_FACT_PARALLEL="2")


def _mini_locomo(path: Path) -> Path:
    """Sessions 1–2 of the bundled conv-26 (35 messages) and the questions whose evidence lies there."""
    data = json.loads((ROOT / "assets" / "locomo-conv-26.json").read_text())
    sample = data[0] if isinstance(data, list) else data
    conv = sample["conversation"]
    keep = {k: v for k, v in conv.items() if not k.startswith("session_") or k.split("_")[1] in ("1", "2")}
    qa = [q for q in sample["qa"] if q.get("evidence") and all(e.split(":")[0] in ("D1", "D2") for e in q["evidence"])]
    path.write_text(json.dumps([{**sample, "sample_id": "conv-26-mini", "conversation": keep, "qa": qa}]))
    return path


def _errors_shown(driver) -> list[str]:
    """Texts of the Error badges and toasts on the page (Gradio marks a failed event on its outputs)."""
    found = driver.find_elements(By.CSS_SELECTOR, ".error, [data-testid='toast-body'], .toast-body.error")
    return [e.text for e in found if e.is_displayed()]


def _clipped_headers(driver) -> list[str]:
    """Table headers on the visible tab whose text is cut off by their column (``PAGE_CSS`` keeps words
    whole, so a word that does not fit is cut, not broken)."""
    return driver.execute_script("""
        return [...document.querySelectorAll('thead th')].filter(th => th.offsetParent !== null).flatMap(th => {
            const box = th.querySelector('.header-content') || th;
            const text = th.innerText.trim();
            return text && box.scrollWidth > box.clientWidth + 1 ? [text] : [];
        });""")


def _forget(d) -> None:
    """Delete this session's memory from the Build tab: the button works only once confirmed."""
    open_tab(d, "Build")
    next(b for b in d.find_elements(By.CSS_SELECTOR, "button") if "Delete this session's memory" in b.text).click()
    button = WebDriverWait(d, 10).until(lambda d: d.find_element(By.ID, "forget-btn"))
    assert not button.is_enabled(), "Delete works without the confirmation"
    next(x for x in d.find_elements(By.CSS_SELECTOR, "label")
         if "Yes, delete all of this session's memory" in x.text).click()
    WebDriverWait(d, 10).until(lambda d: d.find_element(By.ID, "forget-btn").is_enabled())
    d.find_element(By.ID, "forget-btn").click()
    WebDriverWait(d, 30).until(lambda d: "memory was deleted" in text_of(d, "build-summary"))


def _set_number(driver, elem_id: str, value: float) -> None:
    box = driver.find_element(By.CSS_SELECTOR, f"#{elem_id} input[type='number']")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(str(value), Keys.TAB)


def test_a_first_visit_sees_the_prebuilt_example_at_once_then_warnings_and_a_stopped_job(walk_url, tmp_path):
    """The states a visitor meets first: the models loading, said from the first moment; the
    bundled example from its prebuilt memory, not built live, with how it was built (how fast is
    ``benchmarks/speed/inspector.py``'s ``prebuilt_example_s``: speed is a benchmark's figure, not a test's); a
    degenerate build (τ_split at 0.95) warned of, with the setting in force named; a CoreFact job whose
    memory is replaced by another build ends with its reason and no Error badge."""
    from memsif.inspector.build import EXAMPLE_MEMORY

    if not EXAMPLE_MEMORY.exists():
        pytest.fail(f"{EXAMPLE_MEMORY.name} is missing: PYTHONPATH=. python benchmarks/build_example.py makes it")
    shots = Path(os.environ.get("MEMSIF_SCREENSHOT_DIR", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    mini = _mini_locomo(tmp_path / "conv-26-mini.json")
    d = open_browser()
    try:
        d.get(walk_url)
        WebDriverWait(d, 30).until(lambda d: d.find_elements(By.ID, "build-btn"))
        WebDriverWait(d, 30).until(lambda d: text_of(d, "models-status"))
        if "Loading the models" in text_of(d, "models-status"):  # the module's first page: models still loading
            d.save_screenshot(str(shots / "walk-loading-models.png"))
        WebDriverWait(d, 180).until(lambda d: "Models loaded" in text_of(d, "models-status"))

        # 1. the example at once, from its prebuilt memory
        d.find_element(By.ID, "build-btn").click()
        WebDriverWait(d, 90).until(lambda d: "Topical Segments" in text_of(d, "build-summary")
                                   and plot_drawn(d, "timeline"))
        summary = text_of(d, "build-summary")
        assert "prebuilt example memory" in summary and "Loaded in" in summary, summary
        assert "419 messages" in summary and "Qwen2.5-Coder-1.5B-Instruct" in summary and "built on" in summary
        assert not _clipped_headers(d), _clipped_headers(d)
        d.save_screenshot(str(shots / "walk-prebuilt-example.png"))
        open_tab(d, "CoreFacts")
        WebDriverWait(d, 60).until(lambda d: "current CoreFacts" in text_of(d, "corefacts-status"))
        WebDriverWait(d, 30).until(lambda d: "ADD" in d.find_element(By.ID, "fact-ops").text)
        assert not _clipped_headers(d), _clipped_headers(d)
        open_tab(d, "ActiveFacts")
        WebDriverWait(d, 30).until(lambda d: plot_drawn(d, "clusters")
                                   and "not promoted" in d.find_element(By.ID, "clusters-table").text)
        assert not _clipped_headers(d), _clipped_headers(d)
        d.save_screenshot(str(shots / "walk-prebuilt-activefacts.png"))
        open_tab(d, "Trajectories")
        WebDriverWait(d, 30).until(lambda d: plot_drawn(d, "traj-graph") and plot_drawn(d, "traj-decisions"))
        linked = re.search(r"(\d+) link two or more", d.find_element(By.ID, "traj-graph").text)
        assert linked and int(linked.group(1)) >= 2, "the example's trajectories link no segments"  # the graph's title
        d.save_screenshot(str(shots / "walk-prebuilt-trajectories.png"))

        # 2. a degenerate build: warned, with the setting in force named
        open_tab(d, "Build")
        d.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(mini))
        time.sleep(2)
        d.find_element(By.ID, "build-btn").click()
        WebDriverWait(d, 300).until(lambda d: "35 messages" in text_of(d, "build-summary")
                                    and "Structure health" in text_of(d, "build-summary"))
        open_tab(d, "Settings")  # rebuilds the file with every message split by rule
        _set_number(d, "tau-split", 0.95)
        _set_number(d, "tau-merge", 0.99)
        time.sleep(1)
        d.find_element(By.ID, "apply-settings").click()
        open_tab(d, "Build")
        WebDriverWait(d, 600).until(lambda d: "35 messages" in text_of(d, "build-summary")
                                    and "τ_split 0.95" in text_of(d, "build-summary"))
        summary = text_of(d, "build-summary")
        assert "The structure looks degenerate" in summary and "single messages" in summary, summary
        assert "τ_split 0.95 (default 0.325)" in summary, summary
        d.save_screenshot(str(shots / "walk-degenerate-warning.png"))

        # 3. its CoreFact job, replaced by another build, ends with the reason and no Error badge; replaced while
        # at least a wave of its batches is left (a later batch can end the short job before the build begins)
        open_tab(d, "CoreFacts")
        WebDriverWait(d, 300).until(lambda d: re.search(r"Extracting CoreFacts: batch [01] of (?:[3-9]|[1-9]\d+)\b",
                                                        text_of(d, "corefacts-status")))
        open_tab(d, "Build")
        next(b for b in d.find_elements(By.CSS_SELECTOR, "button[aria-label='Clear']") if b.is_displayed()).click()
        time.sleep(1)
        garden = DATA / "garden-chat.txt"
        d.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(garden))
        time.sleep(2)
        d.find_element(By.ID, "build-btn").click()
        open_tab(d, "CoreFacts")
        try:
            WebDriverWait(d, 300).until(lambda d: "CoreFact extraction stopped" in text_of(d, "corefacts-status"))
        except TimeoutException:  # say what the page showed instead, for whoever reads the failure
            d.save_screenshot(str(shots / "walk-stopped-timeout.png"))
            pytest.fail(f"no 'CoreFact extraction stopped' within 300 s; the CoreFacts status: "
                        f"{text_of(d, 'corefacts-status')!r}; the build summary: {text_of(d, 'build-summary')[:400]!r}")
        stopped = text_of(d, "corefacts-status")
        d.save_screenshot(str(shots / "walk-job-stopped.png"))
        assert "replaced by a build of" in stopped and "garden-chat.txt" in stopped, stopped
        open_tab(d, "Build")
        WebDriverWait(d, 600).until(lambda d: "garden-chat.txt" in text_of(d, "build-summary")
                                    and "Topical Segments" in text_of(d, "build-summary"))
        assert not _errors_shown(d), _errors_shown(d)
        open_tab(d, "CoreFacts")  # the replacing build's own extraction runs now, with no badge left from the old one
        assert not _errors_shown(d), _errors_shown(d)
        open_tab(d, "Settings")
        d.find_element(By.ID, "reset-settings").click()
        _forget(d)  # stops the replacing build's extraction, which would otherwise run on into the next walk
    except BaseException:
        d.save_screenshot(str(shots / "walk-first-visit-failed.png"))
        raise
    finally:
        d.quit()


def test_a_first_visit_walks_every_view(walk_url, tmp_path):
    shots = Path(os.environ.get("MEMSIF_SCREENSHOT_DIR", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    mini = _mini_locomo(tmp_path / "conv-26-mini.json")
    bad = tmp_path / "photo.json"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    d = open_browser()
    try:
        d.get(walk_url)
        WebDriverWait(d, 30).until(lambda d: d.find_elements(By.ID, "build-btn"))
        d.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(mini))
        time.sleep(2)
        d.find_element(By.ID, "build-btn").click()
        stated_during_build = None  # the time left, as the page states it while building
        deadline = time.time() + 300
        while "Topical Segments" not in (summary := text_of(d, "build-summary")) and time.time() < deadline:
            if stated_during_build is None and " left at " in summary:
                stated_during_build = summary
                d.save_screenshot(str(shots / "walk-build-time-left.png"))
            time.sleep(0.3)
        assert "35 messages" in text_of(d, "build-summary")
        assert stated_during_build, "the build never said how long it had left"
        WebDriverWait(d, 30).until(lambda d: plot_drawn(d, "timeline"))

        # 5. notation where it appears
        next(b for b in d.find_elements(By.CSS_SELECTOR, "button") if "What the timeline shows" in b.text).click()
        WebDriverWait(d, 10).until(lambda d: "τ_merge (upper dashed line)" in d.find_element(By.TAG_NAME, "body").text)
        d.save_screenshot(str(shots / "walk-build.png"))

        # 2. CoreFacts appear while they are written, under one progress display
        open_tab(d, "CoreFacts")
        first_rows_during, seen, statuses = None, [], []
        deadline = time.time() + 600
        while time.time() < deadline:
            status = text_of(d, "corefacts-status")
            rows = d.find_elements(By.CSS_SELECTOR, "#fact-ops tbody tr")
            seen.append((status[:80], len(rows)))
            statuses.append(status)
            filled = [r for r in rows if (r.get_attribute("textContent") or "").strip()]
            if first_rows_during is None and filled and "current CoreFacts" not in status:
                first_rows_during = status
                d.save_screenshot(str(shots / "walk-corefacts-while-written.png"))
            if "current CoreFacts" in status:
                break
            time.sleep(0.5)
        else:
            pytest.fail("CoreFact extraction did not finish in 10 minutes")
        # the first batch's operations are shown while the extraction goes on (the model titles segments after them)
        assert first_rows_during and ("Extracting CoreFacts: batch" in first_rows_during
                                      or "Titling the Topical Segments" in first_rows_during), \
            f"no operation was shown before the extraction finished: {seen[::4]}"
        extracting = [status for status in statuses if "Extracting CoreFacts: batch" in status]
        assert any(" left at " in status for status in extracting), f"no time left was said: {extracting[:3]}"
        assert len(d.find_elements(By.CSS_SELECTOR, ".progress-text, .eta-bar")) <= 1

        # 3. a bad upload: one message in the page; the views stay
        open_tab(d, "Build")
        next(b for b in d.find_elements(By.CSS_SELECTOR, "button[aria-label='Clear']") if b.is_displayed()).click()
        time.sleep(1)  # the file box is empty again (the views stay)
        d.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(bad))
        WebDriverWait(d, 30).until(lambda d: "was not loaded" in text_of(d, "build-summary"))
        page = d.find_element(By.TAG_NAME, "body").text
        assert page.count("was not loaded") == 1 and "Portable Network Graphics" in page
        assert plot_drawn(d, "timeline"), "the bad upload removed the timeline"
        d.save_screenshot(str(shots / "walk-bad-upload.png"))

        # 6. chat: answer first, trace and raw JSON folded; a message it rests on opens in context
        open_tab(d, "Chat")
        d.find_element(By.CSS_SELECTOR, "#question textarea").send_keys("What did Caroline research?", Keys.ENTER)
        WebDriverWait(d, 300).until(lambda d: "Trace ·" in d.find_element(By.TAG_NAME, "body").text)
        body = d.find_element(By.TAG_NAME, "body").text
        assert body.index("Best supporting messages") < body.index("Trace ·")
        assert "evidence_used" not in body, "the raw JSON is open"
        WebDriverWait(d, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "#context-pick input").is_enabled())
        chosen = pick_first(d, "context-pick")
        WebDriverWait(d, 60).until(lambda d: chosen in text_of(d, "message-context")
                                   and "→" in text_of(d, "message-context"))
        assert "Topical Segment" in text_of(d, "message-context")
        WebDriverWait(d, 30).until(lambda d: plot_drawn(d, "context-plot"))
        d.save_screenshot(str(shots / "walk-message-context.png"))

        # 7. plots fill their width, also when drawn in a tab that was hidden
        open_tab(d, "Trajectories")
        WebDriverWait(d, 60).until(lambda d: plot_drawn(d, "traj-graph"))
        time.sleep(1)
        plot = d.find_element(By.CSS_SELECTOR, "#traj-graph .js-plotly-plot")
        holder = d.find_element(By.ID, "traj-graph")
        assert plot.size["width"] >= 0.9 * holder.size["width"], (plot.size, holder.size)

        # 8. the Evaluate lens on the file's own questions
        open_tab(d, "Evaluate")
        d.find_element(By.ID, "eval-btn").click()
        WebDriverWait(d, 600).until(lambda d: "| MemSIF |" in text_of(d, "eval-summary")
                                    or "Hybrid RAG" in text_of(d, "eval-summary"))
        summary = text_of(d, "eval-summary")
        assert "questions" in summary and "Naive RAG" in summary
        assert "95 % interval" in summary and re.search(r"\d+\.\d % \[\d+\.\d, \d+\.\d\]", summary), summary
        next(x for x in d.find_elements(By.CSS_SELECTOR, "label") if x.text.strip() == "all questions").click()
        WebDriverWait(d, 30).until(lambda d: plot_drawn(d, "eval-plot"))
        d.save_screenshot(str(shots / "walk-evaluate.png"))

        # 4. delete: behind a confirmation, away from Build; every view empties
        _forget(d)
        assert not plot_drawn(d, "timeline")
        open_tab(d, "CoreFacts")
        assert not [r for r in d.find_elements(By.CSS_SELECTOR, "#fact-ops tbody tr")
                    if (r.get_attribute("textContent") or "").strip()], "the operation log still shows deleted memory"
        d.save_screenshot(str(shots / "walk-deleted.png"))
    except BaseException:
        d.save_screenshot(str(shots / "walk-failed.png"))
        raise
    finally:
        d.quit()


def test_an_export_of_three_conversations_is_one_memory_in_the_page(walk_url, tmp_path):
    """A ChatGPT export: the Conversation box lists its conversations by title and date under "All
    conversations", the default, and one build holds all three in the order they happened."""
    shots = Path(os.environ.get("MEMSIF_SCREENSHOT_DIR", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    export = DATA / "formats" / "chatgpt-three-conversations.json"
    d = open_browser()
    try:
        d.get(walk_url)
        WebDriverWait(d, 30).until(lambda d: d.find_elements(By.ID, "build-btn"))
        d.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(export))
        WebDriverWait(d, 30).until(lambda d: "All conversations (3" in
                                   d.find_element(By.CSS_SELECTOR, "#sample-pick input").get_attribute("value"))
        d.find_element(By.CSS_SELECTOR, "#sample-pick input").click()
        options = WebDriverWait(d, 10).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#sample-pick li[data-testid='dropdown-option']"))
        labels = [o.get_attribute("aria-label") for o in options]
        assert labels[1:] == ["Garden plans · 1 January 2024 · 2 messages",
                              "Moving to Lyon · 3 March 2024 · 3 messages", "Rent went up · 1 May 2024 · 3 messages"]
        options[0].click()
        d.find_element(By.ID, "build-btn").click()
        WebDriverWait(d, 300).until(lambda d: "Topical Segments" in text_of(d, "build-summary"))
        summary = text_of(d, "build-summary")
        assert "8 messages" in summary and "3 conversations: Garden plans, Moving to Lyon, Rent went up" in summary
        WebDriverWait(d, 30).until(lambda d: plot_drawn(d, "timeline"))
        d.save_screenshot(str(shots / "walk-export.png"))
    except BaseException:
        d.save_screenshot(str(shots / "walk-export-failed.png"))
        raise
    finally:
        d.quit()
