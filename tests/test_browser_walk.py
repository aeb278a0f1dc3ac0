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
import time
from pathlib import Path

import pytest

from tests.test_browser import CHROMEDRIVER, CHROMIUM, ROOT, _browser, _plot_drawn, _tab, start_app

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                 reason="needs Debian's chromium and chromium-driver (apt-get install ...)")]


@pytest.fixture(scope="module")
def walk_url(tmp_path_factory):
    """The app extracting one CoreFact batch at a time (the small file has three batches; by default
    they would be generated together and written within a second of each other)."""
    yield from start_app(tmp_path_factory, MEMSIF_FACT_PARALLEL="1")


def _mini_locomo(path: Path) -> Path:
    """Sessions 1–2 of the bundled conv-26 (35 messages) and the questions whose evidence lies there."""
    data = json.loads((ROOT / "assets" / "locomo-conv-26.json").read_text())
    sample = data[0] if isinstance(data, list) else data
    conv = sample["conversation"]
    keep = {k: v for k, v in conv.items() if not k.startswith("session_") or k.split("_")[1] in ("1", "2")}
    qa = [q for q in sample["qa"] if q.get("evidence") and all(e.split(":")[0] in ("D1", "D2") for e in q["evidence"])]
    path.write_text(json.dumps([{**sample, "sample_id": "conv-26-mini", "conversation": keep, "qa": qa}]))
    return path


def _text(driver, elem_id: str) -> str:
    return driver.find_element(By.ID, elem_id).text


def _pick_first(driver, elem_id: str) -> str:
    """Open a Gradio dropdown and choose its first option; returns the option's text."""
    driver.find_element(By.CSS_SELECTOR, f"#{elem_id} input").click()
    option = WebDriverWait(driver, 10).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f"#{elem_id} li[data-testid='dropdown-option']"))[0]
    chosen = option.get_attribute("aria-label")
    option.click()
    return chosen


def test_a_first_visit_walks_every_view(walk_url, tmp_path):
    shots = Path(os.environ.get("MEMSIF_SCREENSHOT_DIR", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    mini = _mini_locomo(tmp_path / "conv-26-mini.json")
    bad = tmp_path / "photo.json"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    d = _browser()
    try:
        d.get(walk_url)
        WebDriverWait(d, 30).until(lambda d: d.find_elements(By.ID, "build-btn"))
        d.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(mini))
        time.sleep(2)
        d.find_element(By.ID, "build-btn").click()
        WebDriverWait(d, 300).until(lambda d: "Topical Segments" in _text(d, "build-summary"))
        assert "35 messages" in _text(d, "build-summary")
        WebDriverWait(d, 30).until(lambda d: _plot_drawn(d, "timeline"))

        # 5. notation where it appears
        next(b for b in d.find_elements(By.CSS_SELECTOR, "button") if "What the timeline shows" in b.text).click()
        WebDriverWait(d, 10).until(lambda d: "τ_merge (upper dashed line)" in d.find_element(By.TAG_NAME, "body").text)
        d.save_screenshot(str(shots / "walk-build.png"))

        # 2. CoreFacts appear while they are written, under one progress display
        _tab(d, "CoreFacts")
        first_rows_during, seen = None, []
        deadline = time.time() + 600
        while time.time() < deadline:
            status = _text(d, "corefacts-status")
            rows = d.find_elements(By.CSS_SELECTOR, "#fact-ops tbody tr")
            seen.append((status[:80], len(rows)))
            filled = [r for r in rows if (r.get_attribute("textContent") or "").strip()]
            if first_rows_during is None and filled and "current CoreFacts" not in status:
                first_rows_during = status
                d.save_screenshot(str(shots / "walk-corefacts-while-written.png"))
            if "current CoreFacts" in status:
                break
            time.sleep(0.5)
        else:
            pytest.fail("CoreFact extraction did not finish in 10 minutes")
        assert first_rows_during and "Extracting CoreFacts: batch" in first_rows_during, \
            f"no operation was shown before the extraction finished: {seen[::4]}"
        assert len(d.find_elements(By.CSS_SELECTOR, ".progress-text, .eta-bar")) <= 1

        # 3. a bad upload: one message in the page; the views stay
        _tab(d, "Build")
        next(b for b in d.find_elements(By.CSS_SELECTOR, "button[aria-label='Clear']") if b.is_displayed()).click()
        time.sleep(1)  # the file box is empty again (the views stay)
        d.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(bad))
        WebDriverWait(d, 30).until(lambda d: "was not loaded" in _text(d, "build-summary"))
        page = d.find_element(By.TAG_NAME, "body").text
        assert page.count("was not loaded") == 1 and "Portable Network Graphics" in page
        assert _plot_drawn(d, "timeline"), "the bad upload removed the timeline"
        d.save_screenshot(str(shots / "walk-bad-upload.png"))

        # 6. chat: answer first, trace and raw JSON folded; a message it rests on opens in context
        _tab(d, "Chat")
        d.find_element(By.CSS_SELECTOR, "#question textarea").send_keys("What did Caroline research?", Keys.ENTER)
        WebDriverWait(d, 300).until(lambda d: "Trace ·" in d.find_element(By.TAG_NAME, "body").text)
        body = d.find_element(By.TAG_NAME, "body").text
        assert body.index("Best supporting messages") < body.index("Trace ·")
        assert "evidence_used" not in body, "the raw JSON is open"
        WebDriverWait(d, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "#context-pick input").is_enabled())
        chosen = _pick_first(d, "context-pick")
        WebDriverWait(d, 60).until(lambda d: chosen in _text(d, "message-context")
                                   and "→" in _text(d, "message-context"))
        assert "Topical Segment" in _text(d, "message-context")
        WebDriverWait(d, 30).until(lambda d: _plot_drawn(d, "context-plot"))
        d.save_screenshot(str(shots / "walk-message-context.png"))

        # 7. plots fill their width, also when drawn in a tab that was hidden
        _tab(d, "Trajectories")
        WebDriverWait(d, 60).until(lambda d: _plot_drawn(d, "traj-graph"))
        time.sleep(1)
        plot = d.find_element(By.CSS_SELECTOR, "#traj-graph .js-plotly-plot")
        holder = d.find_element(By.ID, "traj-graph")
        assert plot.size["width"] >= 0.9 * holder.size["width"], (plot.size, holder.size)

        # 8. the Evaluate lens on the file's own questions
        _tab(d, "Evaluate")
        d.find_element(By.ID, "eval-btn").click()
        WebDriverWait(d, 600).until(lambda d: "| MemSIF |" in _text(d, "eval-summary")
                                    or "Hybrid RAG" in _text(d, "eval-summary"))
        summary = _text(d, "eval-summary")
        assert "questions" in summary and "Naive RAG" in summary
        next(x for x in d.find_elements(By.CSS_SELECTOR, "label") if x.text.strip() == "all questions").click()
        WebDriverWait(d, 30).until(lambda d: _plot_drawn(d, "eval-plot"))
        d.save_screenshot(str(shots / "walk-evaluate.png"))

        # 4. delete: behind a confirmation, away from Build; every view empties
        _tab(d, "Build")
        next(b for b in d.find_elements(By.CSS_SELECTOR, "button") if "Delete this session's memory" in b.text).click()
        button = WebDriverWait(d, 10).until(lambda d: d.find_element(By.ID, "forget-btn"))
        assert not button.is_enabled(), "Delete works without the confirmation"
        next(x for x in d.find_elements(By.CSS_SELECTOR, "label")
             if "Yes, delete all of this session's memory" in x.text).click()
        WebDriverWait(d, 10).until(lambda d: d.find_element(By.ID, "forget-btn").is_enabled())
        d.find_element(By.ID, "forget-btn").click()
        WebDriverWait(d, 30).until(lambda d: "memory was deleted" in _text(d, "build-summary"))
        assert not _plot_drawn(d, "timeline")
        _tab(d, "CoreFacts")
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
    export = ROOT / "tests" / "data" / "formats" / "chatgpt-three-conversations.json"
    d = _browser()
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
        WebDriverWait(d, 300).until(lambda d: "Topical Segments" in _text(d, "build-summary"))
        summary = _text(d, "build-summary")
        assert "8 messages" in summary and "3 conversations: Garden plans, Moving to Lyon, Rent went up" in summary
        WebDriverWait(d, 30).until(lambda d: _plot_drawn(d, "timeline"))
        d.save_screenshot(str(shots / "walk-export.png"))
    except BaseException:
        d.save_screenshot(str(shots / "walk-export-failed.png"))
        raise
    finally:
        d.quit()
