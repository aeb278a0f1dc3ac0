"""A memory that is seen as it is made, in headless Chromium (an inspector on fakes with timed model calls):
a 160-message upload replaces a built memory; from the build's first moment every tab shows the new
namespace (never the one replaced), the segment table grows while messages are placed, and the first
CoreFacts are on the page within three extraction batches' time of the extraction's start, with a chat
answer asked in between.
"""

import time

import pytest

from tests.inspector.browser.helpers import CHROMEDRIVER, CHROMIUM, build_until_facts, open_browser, open_tab, text_of

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                reason="needs Debian's chromium and chromium-driver (apt-get install ...)")

#: Seconds each fake extraction batch takes: the unit of "three batches' time".
BATCH_SECONDS = 5.0
TOPICS = ["my cello lessons with the new teacher", "the tomatoes in the community garden",
          "the bike trip along the coast", "the night shifts at the bakery"]


def _old() -> str:
    return "## 1 March 2024\nZora: I play the cello in a quartet.\nQuinn: A quartet sounds like fun.\n"


def _long(sessions: int = 4, per_session: int = 40) -> str:
    lines = []
    for s in range(sessions):
        lines.append(f"## {s + 3} April 2024")
        for k in range(per_session):
            topic = TOPICS[(k // 10 + s) % len(TOPICS)]
            lines.append(f"{'Ana' if k % 2 == 0 else 'Ben'}: Message {s * per_session + k} about {topic}, "
                         f"session {s + 1}.")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def page_url(tmp_path_factory):
    from memsif.inspector import build
    from tests.conftest import serve_on_fakes
    from tests.fakes import FakeLLM, grounded_extraction

    facts = grounded_extraction({"lessons": {"subject": "Ana", "type": "Event",
                                             "statement": "Ana takes cello lessons with a new teacher."},
                                 "quartet": {"subject": "Zora", "type": "Preference",
                                             "statement": "Zora plays the cello in a quartet."}})

    def extract(prompt):  # one extraction batch: BATCH_SECONDS of model time
        time.sleep(BATCH_SECONDS)
        return facts(prompt)

    def judge(prompt):  # placing a message takes a moment, so the build is seen as it goes
        time.sleep(0.25)
        return 0.7

    llm = FakeLLM({"segment_judge": judge, "trajectory_judge": 0.6, "core_extract": extract, "core_operation": "A",
                   "sufficiency": 0.2, "answer": "Cello lessons.", "fact_verify": 0.9})
    saved, build.REDRAW_SECONDS = build.REDRAW_SECONDS, 1.0
    for url, _inspector in serve_on_fakes(llm, tmp_path_factory.mktemp("growing"), fact_verification="model",
                                          persist_every=10, tau_merge=0.99, tau_split=0.01):
        yield url
    build.REDRAW_SECONDS = saved


def _rows(d, table: str) -> list[str]:
    return [c.get_attribute("textContent") or "" for c in d.find_elements(By.CSS_SELECTOR,
                                                                            f"#{table} [role='gridcell']")]


def _segments(d) -> list[tuple[str, ...]]:
    """The segment table's rows as (segment, messages, first, last)."""
    cells = [c.strip() for c in _rows(d, "segments")]
    width = 9  # ``viz.SEGMENT_COLUMNS``
    return [(r[0], r[3], r[4], r[5]) for r in (cells[k:k + width] for k in range(0, len(cells), width))]


OLD = [("S1", "2", "D1:1", "D1:2")]


def test_every_view_shows_the_new_memory_as_it_is_made(page_url, tmp_path):
    old, new = tmp_path / "pixel.txt", tmp_path / "lessons.txt"
    old.write_text(_old())
    new.write_text(_long())
    d = open_browser()
    try:
        build_until_facts(d, page_url, old)
        WebDriverWait(d, 15).until(lambda d: any("quartet" in c for c in _rows(d, "corefacts-table")))
        open_tab(d, "Build")
        assert _segments(d) == OLD

        d.find_element(By.CSS_SELECTOR, "#upload button[aria-label='Clear'], #upload button[title='Clear']").click()
        WebDriverWait(d, 15).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#upload input[type='file']"))
        d.find_element(By.CSS_SELECTOR, "#upload input[type='file']").send_keys(str(new))
        WebDriverWait(d, 15).until(lambda d: "160 messages" in (d.find_element(By.CSS_SELECTOR, "#sample-pick input")
                                                               .get_attribute("value") or ""))
        d.find_element(By.ID, "build-btn").click()
        clicked = time.monotonic()  # the replaced memory's summary goes at once
        WebDriverWait(d, 10).until(lambda d: "⏳ Building 160 messages" in text_of(d, "build-summary")
                                   or "new messages placed" in text_of(d, "build-summary"))
        assert time.monotonic() - clicked < 3, "the replaced memory's summary stayed on the page"
        WebDriverWait(d, 30).until(lambda d: "new messages placed" in text_of(d, "build-summary"))
        assert _segments(d) != OLD, "the replaced memory is shown"
        open_tab(d, "CoreFacts")
        assert "Building the memory of" in text_of(d, "corefacts-status"), text_of(d, "corefacts-status")
        assert not any("quartet" in c for c in _rows(d, "corefacts-table")), "the replaced memory's facts are shown"
        open_tab(d, "Build")
        seen = set()
        while "new messages placed" in text_of(d, "build-summary"):  # the table grows while messages are placed
            rows = _segments(d)
            assert rows != OLD, "the replaced memory is shown again"
            seen.add(sum(int(r[1]) for r in rows))
            time.sleep(0.3)
        assert len(seen - {0}) >= 4, f"the segment table did not grow while the memory was built: {sorted(seen)}"

        open_tab(d, "CoreFacts")
        WebDriverWait(d, 60).until(lambda d: "Extracting CoreFacts" in text_of(d, "corefacts-status"))
        started = time.monotonic()
        open_tab(d, "Chat")  # a question while the facts are extracted
        d.find_element(By.CSS_SELECTOR, "#question textarea").send_keys("What lessons does Ana take?", Keys.ENTER)
        WebDriverWait(d, 60).until(lambda d: "Trace ·" in d.find_element(By.TAG_NAME, "body").text)
        open_tab(d, "CoreFacts")
        WebDriverWait(d, 60).until(lambda d: any("lessons" in c for c in _rows(d, "corefacts-table")))
        waited = time.monotonic() - started
        status = text_of(d, "corefacts-status")
        assert waited <= 3 * BATCH_SECONDS, f"the first CoreFacts came {waited:.1f} s after extraction began"
        # still extracting: its batches, or the segment titles the model writes after them
        assert "current CoreFacts" not in status and any(
            s in status for s in ("Extracting CoreFacts", "Titling the Topical Segments")), \
            f"the facts were shown only after the whole extraction: {status}"
        d.save_screenshot(str(tmp_path / "growing-corefacts.png"))
    finally:
        d.quit()
