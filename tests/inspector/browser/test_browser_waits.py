"""What a person waiting for a live build reads, in headless Chromium (an inspector on fakes with timed
model calls): a WhatsApp (Android) export of 264 messages is uploaded and built; every status line of the
build, its structure and each CoreFact stage, states a wait; the first CoreFacts are on the page before the
model writes any segment title; and while one extraction step stalls, the wait the page states grows
instead of standing still. What a screen reader is told when a step ends is a word, not a raw locale key.
"""

import re
import threading
import time

import pytest

from tests.inspector.browser.helpers import CHROMEDRIVER, CHROMIUM, open_browser, open_tab, text_of, upload_and_build

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                reason="needs Debian's chromium and chromium-driver (apt-get install ...)")

#: Seconds of one fake extraction call, and of the one that stalls (the STALLED-th call).
BATCH_SECONDS, STALL_SECONDS, STALLED = 0.3, 24.0, 12
TOPICS = ["the cello lessons with the new teacher", "the tomatoes in the community garden",
          "the bike trip along the coast", "the night shifts at the bakery"]
#: What a status line says of its wait: the time left, or when the first unit is due.
WAIT = re.compile(r" left |the first in about|finishing")


def _whatsapp(days: int = 12, per_day: int = 22) -> str:
    """A two-person WhatsApp (Android) export: ``days`` days of ``per_day`` messages."""
    lines = []
    for day in range(days):
        for k in range(per_day):
            topic = TOPICS[(k // 6 + day) % len(TOPICS)]
            who = "Ana" if k % 2 == 0 else "Ben"
            lines.append(f"{day + 3:02d}/04/2024, {9 + k // 4}:{(k % 4) * 15:02d} - {who}: Message {day * per_day + k} "
                         f"about {topic}, session {day + 1}.")
    return "\n".join(lines) + "\n"


class Timeline:
    """When the fake model was first asked for a segment title, and the extraction calls made."""

    def __init__(self) -> None:
        self.first_title: float | None = None
        self.extractions = 0
        self.lock = threading.Lock()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from memsif.inspector import build
    from tests.conftest import serve_on_fakes
    from tests.fakes import FakeLLM, grounded_extraction

    seen = Timeline()
    facts = grounded_extraction({"cello": {"subject": "Ana", "type": "Event",
                                           "statement": "Ana takes cello lessons with a new teacher."}})

    def extract(prompt):
        with seen.lock:
            seen.extractions += 1
            stalls = seen.extractions == STALLED
        time.sleep(STALL_SECONDS if stalls else BATCH_SECONDS)
        return facts(prompt)

    def title(prompt):
        with seen.lock:
            seen.first_title = seen.first_title or time.monotonic()
        time.sleep(0.2)
        return "Ana: session plans"

    def judge(prompt):  # placing a message takes a moment, so the build's statuses are seen
        time.sleep(0.1)
        return 0.7

    llm = FakeLLM({"segment_judge": judge, "trajectory_judge": 0.6, "core_extract": extract, "core_operation": "A",
                   "sufficiency": 0.2, "answer": "Cello lessons.", "fact_verify": 0.9, "segment_title": title})
    saved, build.REDRAW_SECONDS = build.REDRAW_SECONDS, 1.0
    for url, inspector in serve_on_fakes(llm, tmp_path_factory.mktemp("waits"), fact_verification="model",
                                         fact_parallel=2, persist_every=20,
                                         tau_merge=0.99, tau_split=0.01):
        # the prior a page takes from its prebuilt example's build (here one of these fakes' pace)
        inspector.pace.set_prior({"messages": 264, "segments": 40, "structure_seconds": 20, "core_facts_seconds": 30,
                                  "titles_seconds": 8}, 8)
        yield url, seen
    build.REDRAW_SECONDS = saved


def _seconds(status: str) -> float:
    """The middle of the wait a status line states ("about 20–30 s left" → 25), in seconds."""
    match = re.search(r"about (\d+)(?:–(\d+))? (s|min)(?: (\d+) min)?", status)
    assert match, status
    low, high = float(match[1]), float(match[2] or match[1])
    return (low + high) / 2 * (60 if match[3] == "min" else 1)


def _announced(d) -> set[str]:
    """What the page's screen-reader status lines say now."""
    return {e.get_attribute("textContent") or "" for e in d.find_elements(By.CSS_SELECTOR, "[role=status]")}


def test_every_status_states_its_wait_facts_come_before_titles_and_a_stall_makes_the_wait_grow(served, tmp_path):
    url, seen = served
    chat = tmp_path / "WhatsApp Chat with Ben.txt"
    chat.write_text(_whatsapp())
    d = open_browser()
    try:
        upload_and_build(d, url, chat)
        building, shown = [], []
        while "Topical Segments" not in (summary := text_of(d, "build-summary")):
            if summary.startswith(("Loading models and reading", "Building Structured Interaction Memory")):
                building.append(summary)
            shown.append(summary)
            time.sleep(0.3)
        assert "264 messages" in summary, summary
        assert building and all(WAIT.search(s) for s in building), [s for s in building if not WAIT.search(s)][:3] \
            or shown[::5]

        open_tab(d, "CoreFacts")
        extracting, first_fact, stalled, announced = [], None, [], set()
        deadline = time.monotonic() + 240
        while "current CoreFacts" not in (status := text_of(d, "corefacts-status")):
            assert time.monotonic() < deadline, f"the extraction did not end: {status}"
            if status.startswith(("Loading the model", "Extracting", "Second pass", "Titling")):
                extracting.append(status)
            if first_fact is None and "cello" in d.find_element(By.ID, "corefacts-table").text:
                first_fact = time.monotonic()
            announced |= _announced(d)
            with seen.lock:
                stalling = seen.extractions == STALLED
            if stalling and status.startswith("Extracting"):
                stalled.append((time.monotonic(), _seconds(status)))
            time.sleep(0.5)
        for _ in range(50):  # the extraction's end is announced (Gradio says one thing at most every 5 s, for 1 s)
            announced |= _announced(d)
            time.sleep(0.2)
        d.save_screenshot(str(tmp_path / "waits-corefacts.png"))
    finally:
        d.quit()
    assert "Done" in announced and not any("common." in a for a in announced), announced  # no raw locale key read out
    missing = [s for s in extracting if not WAIT.search(s)]
    assert extracting and not missing, missing[:3]
    assert any(s.startswith("Titling") for s in extracting), "the model's titles were not said"
    assert first_fact is not None and seen.first_title is not None and first_fact < seen.first_title, \
        "a segment title was written before the first CoreFacts were on the page"
    late = [w for t, w in stalled if t - stalled[0][0] >= STALL_SECONDS / 2]
    assert len(late) >= 3, stalled
    assert late[-1] > late[0] and max(late) > min(w for _, w in stalled), \
        f"the stated wait stood still while a batch stalled: {stalled}"
