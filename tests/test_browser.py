"""The real app in headless Chromium (Debian's ``chromium`` and ``chromium-driver``): build memory
from an uploaded transcript on the real packaged models, check the plots are drawn, ask a question,
save a screenshot, and check that a second browser session sees none of it.

Screenshots go to ``$MEMSIF_SCREENSHOT_DIR`` when set (else the test's temporary folder).
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tests.conftest import free_port, wait_until_up  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPT = Path(__file__).resolve().parent / "data" / "garden-chat.txt"
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                 reason="needs Debian's chromium and chromium-driver (apt-get install ...)")]


def start_app(tmp_path_factory, **env_extra):
    """Start ``python app.py`` on a free port with its own data folder; yields its URL, then stops it."""
    port = free_port()
    env = {**os.environ, "MEMSIF_DATA_DIR": str(tmp_path_factory.mktemp("browser-data")),
           "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False", **env_extra}
    log = tmp_path_factory.mktemp("browser-log") / "app.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    if (failed := wait_until_up(proc, url, log, 120, "app.py")) is not None:
        pytest.fail(failed)
    yield url
    proc.terminate()
    proc.wait(20)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    yield from start_app(tmp_path_factory)


def _browser():
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--window-size=1400,1800"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def _tab(driver, name: str) -> None:
    for tab in driver.find_elements(By.CSS_SELECTOR, "button[role='tab']"):
        if tab.text.strip() == name:
            tab.click()
            return
    raise AssertionError(f"no tab {name!r}")


def _plot_drawn(driver, elem_id: str) -> bool:
    return bool(driver.find_elements(By.CSS_SELECTOR, f"#{elem_id} .js-plotly-plot .scatterlayer .trace, "
                                                      f"#{elem_id} .js-plotly-plot .gl-container canvas"))


def upload_and_build(driver, url: str, path: Path) -> None:
    """Open the page at ``url``, upload ``path`` and press Build memory."""
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.ID, "build-btn"))
    driver.find_element(By.CSS_SELECTOR, "input[type='file']").send_keys(str(path))
    time.sleep(2)  # the upload lists the file's samples
    driver.find_element(By.ID, "build-btn").click()


def build_until_facts(driver, url: str, path: Path, seconds: float = 120) -> None:
    """``upload_and_build``, then wait for the build's summary and, on the CoreFacts tab, for its extraction
    to end (the tab stays shown)."""
    upload_and_build(driver, url, path)
    WebDriverWait(driver, 60).until(lambda d: "Topical Segments" in d.find_element(By.ID, "build-summary").text)
    _tab(driver, "CoreFacts")
    WebDriverWait(driver, seconds).until(
        lambda d: "current CoreFacts" in d.find_element(By.ID, "corefacts-status").text)


def test_upload_build_plots_chat_and_a_second_session_sees_nothing(app_url, tmp_path):
    shots = Path(os.environ.get("MEMSIF_SCREENSHOT_DIR", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    first = _browser()
    try:
        upload_and_build(first, app_url, TRANSCRIPT)
        WebDriverWait(first, 300).until(
            lambda d: "Topical Segments" in d.find_element(By.ID, "build-summary").text)
        assert "14 messages" in first.find_element(By.ID, "build-summary").text
        WebDriverWait(first, 30).until(lambda d: _plot_drawn(d, "timeline"))
        first.save_screenshot(str(shots / "browser-build.png"))

        _tab(first, "Trajectories")
        WebDriverWait(first, 60).until(lambda d: _plot_drawn(d, "traj-graph"))

        _tab(first, "Chat")
        box = first.find_element(By.CSS_SELECTOR, "#question textarea")
        box.send_keys("Which tomato variety did Ana plant?", Keys.ENTER)
        started = time.perf_counter()
        WebDriverWait(first, 180).until(lambda d: "Trace ·" in d.find_element(By.TAG_NAME, "body").text)
        print(f"first answer after {time.perf_counter() - started:.1f} s (CoreFacts being extracted meanwhile)")
        first.save_screenshot(str(shots / "browser-chat.png"))
    finally:
        first.quit()

    second = _browser()
    try:
        second.get(app_url)
        WebDriverWait(second, 30).until(lambda d: d.find_elements(By.ID, "build-btn"))
        assert "Topical Segments" not in second.find_element(By.ID, "build-summary").text
        assert not _plot_drawn(second, "timeline")
        _tab(second, "Chat")
        box = second.find_element(By.CSS_SELECTOR, "#question textarea")
        box.send_keys("Which tomato variety did Ana plant?", Keys.ENTER)
        WebDriverWait(second, 60).until(lambda d: "No memory yet" in d.find_element(By.TAG_NAME, "body").text)
        assert "San Marzano" not in second.find_element(By.TAG_NAME, "body").text
        second.save_screenshot(str(shots / "browser-second-session.png"))
    finally:
        second.quit()
