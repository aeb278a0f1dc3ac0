"""The real app in headless Chromium (Debian's ``chromium`` and ``chromium-driver``): build memory
from an uploaded transcript on the real packaged models, check the plots are drawn, ask a question,
save a screenshot, and check that a second browser session sees none of it.

Screenshots go to ``$MEMSIF_SCREENSHOT_DIR`` when set (else the test's temporary folder).
"""

import os
import time
from pathlib import Path

import pytest

from tests import DATA
from tests.inspector.browser.helpers import (
    CHROMEDRIVER,
    CHROMIUM,
    open_browser,
    open_tab,
    plot_drawn,
    start_app,
    upload_and_build,
)

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

TRANSCRIPT = DATA / "garden-chat.txt"

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                 reason="needs Debian's chromium and chromium-driver (apt-get install ...)")]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    yield from start_app(tmp_path_factory)


def test_upload_build_plots_chat_and_a_second_session_sees_nothing(app_url, tmp_path):
    shots = Path(os.environ.get("MEMSIF_SCREENSHOT_DIR", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    first = open_browser()
    try:
        upload_and_build(first, app_url, TRANSCRIPT)
        WebDriverWait(first, 300).until(
            lambda d: "Topical Segments" in d.find_element(By.ID, "build-summary").text)
        assert "14 messages" in first.find_element(By.ID, "build-summary").text
        WebDriverWait(first, 30).until(lambda d: plot_drawn(d, "timeline"))
        first.save_screenshot(str(shots / "browser-build.png"))

        open_tab(first, "Trajectories")
        WebDriverWait(first, 60).until(lambda d: plot_drawn(d, "traj-graph"))

        open_tab(first, "Chat")
        box = first.find_element(By.CSS_SELECTOR, "#question textarea")
        box.send_keys("Which tomato variety did Ana plant?", Keys.ENTER)
        started = time.perf_counter()
        WebDriverWait(first, 180).until(lambda d: "Trace ·" in d.find_element(By.TAG_NAME, "body").text)
        print(f"first answer after {time.perf_counter() - started:.1f} s (CoreFacts being extracted meanwhile)")
        first.save_screenshot(str(shots / "browser-chat.png"))
    finally:
        first.quit()

    second = open_browser()
    try:
        second.get(app_url)
        WebDriverWait(second, 30).until(lambda d: d.find_elements(By.ID, "build-btn"))
        assert "Topical Segments" not in second.find_element(By.ID, "build-summary").text
        assert not plot_drawn(second, "timeline")
        open_tab(second, "Chat")
        box = second.find_element(By.CSS_SELECTOR, "#question textarea")
        box.send_keys("Which tomato variety did Ana plant?", Keys.ENTER)
        WebDriverWait(second, 60).until(lambda d: "No memory yet" in d.find_element(By.TAG_NAME, "body").text)
        assert "San Marzano" not in second.find_element(By.TAG_NAME, "body").text
        second.save_screenshot(str(shots / "browser-second-session.png"))
    finally:
        second.quit()
