"""A person corrects, searches and carries a memory in headless Chromium (an inspector on fakes): edits
a CoreFact, deletes another and asks a question whose context held it (gone from the trace), restores
it, finds a message with the Search tab, downloads the memory, deletes the session's memory, restores
the download, and finds the edited fact and its history again.
"""

import time
import urllib.request

import pytest

from tests.inspector.browser.helpers import CHROMEDRIVER, CHROMIUM, build_until_facts, open_browser, open_tab, text_of

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                reason="needs Debian's chromium and chromium-driver (apt-get install ...)")

TRANSCRIPT = """## 3 March 2024
Alice: My rent is 1,200 euros a month.
Bob: That's a lot for Lisbon.
Alice: I also started learning the cello last week.
Bob: Which teacher do you have?
"""
CELLO, RENT = "Alice started learning the cello.", "Alice's rent is 1,200 euros a month."


@pytest.fixture(scope="module")
def page_url(tmp_path_factory):
    from tests.conftest import serve_on_fakes
    from tests.fakes import FakeLLM, grounded_extraction

    facts = grounded_extraction({"cello": {"subject": "Alice", "type": "Event", "statement": CELLO},
                                 "rent is": {"subject": "Alice", "type": "Identity", "statement": RENT}})
    llm = FakeLLM({"segment_judge": 0.7, "trajectory_judge": 0.6, "core_extract": facts, "core_operation": "A",
                   "sufficiency": 0.2, "answer": "1,200 euros.", "fact_verify": 0.9})
    for url, _inspector in serve_on_fakes(llm, tmp_path_factory.mktemp("corrections"), fact_verification="model"):
        yield url


def _cell(d, table: str, text: str):
    """The cell of table ``table`` (its elem_id) that shows ``text``."""
    return WebDriverWait(d, 15).until(lambda d: [c for c in d.find_elements(By.CSS_SELECTOR,
                                                                            f"#{table} [role='gridcell']")
                                                 if (c.get_attribute("textContent") or "").strip() == text])[0]


def _select_fact(d, statement: str, fact_id: str | None = None) -> None:
    """Select the fact that says ``statement``: click its row, or type ``fact_id`` into the Fact box;
    its fields fill in."""
    if fact_id is None:
        _cell(d, "corefacts-table", statement).click()
    else:
        box = d.find_element(By.CSS_SELECTOR, "#fact-id textarea, #fact-id input")
        box.clear()
        box.send_keys(fact_id, Keys.ENTER)
    WebDriverWait(d, 15).until(lambda d: d.find_element(By.CSS_SELECTOR, "#fact-statement textarea")
                               .get_attribute("value") == statement)


def _correction(d, button: str, wanted: str) -> str:
    d.find_element(By.ID, button).click()
    WebDriverWait(d, 30).until(lambda d: wanted in text_of(d, "fact-correction-status"))
    return text_of(d, "fact-correction-status")


def _click(d, by: str, selector: str) -> None:
    """Click the element once it is shown (a section that was just opened slides in)."""
    element = WebDriverWait(d, 15).until(lambda d: next((e for e in d.find_elements(by, selector)
                                                         if e.is_displayed()), None))
    d.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
    time.sleep(0.5)
    element.click()


def _open(d, label: str) -> None:
    for el in d.find_elements(By.XPATH, f'//*[normalize-space(text())="{label}"]'):
        if el.is_displayed():
            el.click()
            return
    raise AssertionError(f"no section {label!r}")


def test_a_person_edits_deletes_restores_searches_downloads_and_restores_a_memory(page_url, tmp_path):
    path = tmp_path / "alice.txt"
    path.write_text(TRANSCRIPT)
    d = open_browser()
    try:
        build_until_facts(d, page_url, path)

        _select_fact(d, CELLO)
        box = d.find_element(By.CSS_SELECTOR, "#fact-statement textarea")
        box.clear()
        box.send_keys("Alice started learning the viola.")
        said = _correction(d, "fact-save", "EDIT")
        assert "a person corrected F" in said and "'Alice started learning the cello.' → 'Alice started learning " \
                                                  "the viola.'" in said
        _select_fact(d, RENT, "F1")
        assert "DELETE" in _correction(d, "fact-delete", "DELETE")
        body = d.find_element(By.TAG_NAME, "body").text
        assert "deleted by a person" in body and "corrected by a person" in body

        open_tab(d, "Chat")
        d.find_element(By.CSS_SELECTOR, "#question textarea").send_keys("How much is Alice's rent?", Keys.ENTER)
        WebDriverWait(d, 60).until(lambda d: "Trace ·" in d.find_element(By.TAG_NAME, "body").text)
        for title in d.find_elements(By.XPATH, "//*[starts-with(normalize-space(text()), 'Trace ·')]"):
            title.click()
        WebDriverWait(d, 30).until(lambda d: "Query-local evidence" in d.find_element(By.TAG_NAME, "body").text)
        trace = d.find_element(By.TAG_NAME, "body").text
        assert RENT not in trace, "a deleted fact is still in the answer's context"
        assert "viola" in trace, "the edited fact is not in the answer's context"

        open_tab(d, "CoreFacts")
        _select_fact(d, RENT, "F1")
        assert "RESTORE" in _correction(d, "fact-restore", "RESTORE")

        open_tab(d, "Search")
        d.find_element(By.CSS_SELECTOR, "#search-query textarea").send_keys("Lisbon", Keys.ENTER)
        WebDriverWait(d, 30).until(lambda d: "messages for" in text_of(d, "search-status"))
        _cell(d, "search-found", "That's a lot for Lisbon.").click()
        WebDriverWait(d, 30).until(lambda d: "Topical Segment" in text_of(d, "search-place"))

        open_tab(d, "Build")
        _open(d, "Download or restore this memory")
        _click(d, By.ID, "download-btn")
        link = WebDriverWait(d, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#download-file a[href]"))[0]
        saved = tmp_path / "memsif-memory.json.gz"
        saved.write_bytes(urllib.request.urlopen(link.get_attribute("href"), timeout=30).read())
        assert saved.read_bytes()[:2] == b"\x1f\x8b"

        _open(d, "Delete this session's memory")
        _click(d, By.XPATH, "//label[contains(., \"Yes, delete all of this session's memory\")]")
        WebDriverWait(d, 10).until(lambda d: d.find_element(By.ID, "forget-btn").is_enabled())
        _click(d, By.ID, "forget-btn")
        WebDriverWait(d, 30).until(lambda d: "was deleted" in text_of(d, "build-summary"))

        _click(d, By.CSS_SELECTOR, "#upload button[aria-label='Clear'], #upload button[title='Clear']")
        WebDriverWait(d, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#upload input[type='file']"))
        d.find_element(By.CSS_SELECTOR, "#upload input[type='file']").send_keys(str(saved))
        time.sleep(2)
        d.find_element(By.ID, "build-btn").click()
        WebDriverWait(d, 60).until(lambda d: "Restored" in text_of(d, "build-summary"))
        assert "3 corrections by a person in its log" in text_of(d, "build-summary")
        open_tab(d, "CoreFacts")
        _click(d, By.XPATH, "//button[contains(., 'Refresh')]")
        WebDriverWait(d, 30).until(lambda d: "Alice started learning the viola." in d.find_element(
            By.TAG_NAME, "body").text)
        body = d.find_element(By.TAG_NAME, "body").text
        assert "corrected by a person" in body and CELLO in body, "the edit's history did not come back"
        assert RENT in body
    finally:
        d.save_screenshot(str(tmp_path / "corrections.png"))
        d.quit()
