"""Transcript text in headless Chromium is shown as written, never as markup: an inspector on fakes
(fake LLM, hashing embedder, in-memory Qdrant) builds a transcript whose messages and speaker names
hold HTML and Markdown, and every view that shows them (the build summary, the Topical Segment
table, the chat's answer and trace, a message in context, a trajectory's messages, the CoreFacts and
their log) is opened: no script runs, no tag or link is made, the text reads as it was written.
"""

import time

import pytest

from tests.inspector.browser.helpers import (
    CHROMEDRIVER,
    CHROMIUM,
    open_browser,
    open_tab,
    pick_first,
    plot_drawn,
    text_of,
    upload_and_build,
)
from tests.inspector.test_app import IMG, MARKUP_TRANSCRIPT

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                reason="needs Debian's chromium and chromium-driver (apt-get install ...)")

@pytest.fixture(scope="module")
def markup_url(tmp_path_factory):
    from memsif.entities import RegexEntityExtractor
    from tests.conftest import serve_on_fakes
    from tests.fakes import FakeLLM, grounded_extraction

    facts = grounded_extraction({"San Marzano tomatoes": {
        "subject": "<b>Ana</b>", "type": "Preference",
        "statement": f"Ana planted San Marzano tomatoes {IMG} in the garden."}})
    llm = FakeLLM({"segment_judge": 0.7, "trajectory_judge": 0.6, "core_extract": facts, "core_operation": "A",
                   "sufficiency": 0.2, "answer": f"San Marzano <b>bold</b> {IMG}"})
    for url, _inspector in serve_on_fakes(llm, tmp_path_factory.mktemp("markup"), entities=RegexEntityExtractor(),
                                          fact_operation="model"):
        yield url


def _markup_made(driver) -> list[str]:
    """What the page made of the transcript's markup: a script that ran, tags and links it created."""
    return driver.execute_script("""
        const found = [];
        if (window.__pwned !== undefined) found.push('a script ran: window.__pwned = ' + window.__pwned);
        const app = document.querySelector('gradio-app') || document.body;
        app.querySelectorAll('img[src="x"], script:not([src]), a[href^="javascript"]').forEach(
            e => found.push('element ' + e.outerHTML.slice(0, 80)));
        app.querySelectorAll('b, strong').forEach(e => {
            if (['bold', 'Bo', 'Ana'].includes(e.textContent.trim())) found.push('made bold: ' + e.outerHTML);
        });
        app.querySelectorAll('style').forEach(e => {
            if (e.textContent.includes('display:none')) found.push('a style from the transcript');
        });
        if (getComputedStyle(document.body).display === 'none') found.push('the page was hidden');
        return found;""")


def test_markup_in_a_transcript_is_shown_as_written_in_every_view(markup_url, tmp_path):
    path = tmp_path / "garden.txt"
    path.write_text(MARKUP_TRANSCRIPT)
    d = open_browser()
    try:
        upload_and_build(d, markup_url, path)
        WebDriverWait(d, 120).until(lambda d: "Topical Segments" in text_of(d, "build-summary")
                                    and plot_drawn(d, "timeline"))
        assert not _markup_made(d), _markup_made(d)
        rows = [row.text for row in d.find_elements(By.CSS_SELECTOR, "#segments tbody tr")]
        assert rows and not any(w in row for row in rows for w in ("onerror", "src", "style")), rows  # key entities

        open_tab(d, "Chat")
        d.find_element(By.CSS_SELECTOR, "#question textarea").send_keys("Which tomatoes <b>did</b> Ana plant?",
                                                                        Keys.ENTER)
        WebDriverWait(d, 120).until(lambda d: "Trace ·" in d.find_element(By.TAG_NAME, "body").text)
        for title in d.find_elements(By.XPATH, "//*[starts-with(normalize-space(text()), 'Trace ·')]"):
            title.click()  # the trace unfolds
        WebDriverWait(d, 30).until(lambda d: "Query-local evidence" in d.find_element(By.TAG_NAME, "body").text)
        body = d.find_element(By.TAG_NAME, "body").text
        assert f"San Marzano <b>bold</b> {IMG}" in body, "the answer is not shown as written"
        assert "Which tomatoes <b>did</b> Ana plant?" in body, "the question is not shown as written"
        assert IMG in body.split("Query-local evidence", 1)[1], "the trace's evidence is not shown as written"
        WebDriverWait(d, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "#context-pick input").is_enabled())
        pick_first(d, "context-pick")
        WebDriverWait(d, 60).until(lambda d: "Topical Segment" in text_of(d, "message-context"))
        context = text_of(d, "message-context")
        assert IMG in context or "<b>bold</b> move! [link](javascript:window.__pwned=2)" in context, context
        assert not _markup_made(d), _markup_made(d)

        open_tab(d, "Trajectories")
        WebDriverWait(d, 60).until(lambda d: plot_drawn(d, "traj-graph"))
        pick_first(d, "trajectory-pick")
        WebDriverWait(d, 30).until(lambda d: "San Marzano" in d.find_element(By.TAG_NAME, "body").text)
        assert IMG in d.find_element(By.TAG_NAME, "body").text, "a trajectory's messages are not shown as written"
        d.find_element(By.CSS_SELECTOR, "#trajectory-pick input").click()  # its options, drawn
        time.sleep(0.5)
        assert not _markup_made(d), _markup_made(d)

        open_tab(d, "CoreFacts")
        WebDriverWait(d, 120).until(lambda d: "current CoreFacts" in text_of(d, "corefacts-status"))
        WebDriverWait(d, 30).until(lambda d: "<b>Ana</b>" in d.find_element(By.TAG_NAME, "body").text)
        assert IMG in d.find_element(By.TAG_NAME, "body").text, "a CoreFact is not shown as written"
        open_tab(d, "ActiveFacts")
        WebDriverWait(d, 30).until(lambda d: plot_drawn(d, "clusters"))
        assert not _markup_made(d), _markup_made(d)
    finally:
        d.quit()
