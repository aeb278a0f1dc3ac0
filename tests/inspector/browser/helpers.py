"""What the browser tests share: the Chromium found on this machine, the app started on a free port, a
headless browser, and the moves a person makes on the page (open a tab, upload and build, read a field).

Importing this module skips the importing test module where Selenium is not installed.
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
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tests import ROOT  # noqa: E402
from tests.conftest import free_port, wait_until_up  # noqa: E402

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


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


def open_browser():
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--window-size=1400,1800"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def open_tab(driver, name: str) -> None:
    for tab in driver.find_elements(By.CSS_SELECTOR, "button[role='tab']"):
        if tab.text.strip() == name:
            tab.click()
            return
    raise AssertionError(f"no tab {name!r}")


def plot_drawn(driver, elem_id: str) -> bool:
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
    open_tab(driver, "CoreFacts")
    WebDriverWait(driver, seconds).until(
        lambda d: "current CoreFacts" in d.find_element(By.ID, "corefacts-status").text)


def text_of(driver, elem_id: str) -> str:
    return driver.find_element(By.ID, elem_id).text


def pick_first(driver, elem_id: str) -> str:
    """Open a Gradio dropdown and choose its first option; returns the option's text."""
    driver.find_element(By.CSS_SELECTOR, f"#{elem_id} input").click()
    option = WebDriverWait(driver, 10).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f"#{elem_id} li[data-testid='dropdown-option']"))[0]
    chosen = option.get_attribute("aria-label")
    option.click()
    return chosen
