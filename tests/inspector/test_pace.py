"""Waiting times the page states, from fake timings: a prior before anything is measured, the job's own
pace (its start left out) once units finish, the range narrowing, the pace kept for the next job."""

import random

import pytest

from memsif.inspector.pace import FACTS, FLOOR, SPREAD, STRUCTURE, PaceBook, duration, left_text, prior_from


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_prior_comes_from_the_prebuilt_examples_provenance():
    made = {"messages": 419, "structure_seconds": 695, "core_facts_seconds": 2741, "model_load_seconds": 24.8}
    assert prior_from(made, 8) == pytest.approx({STRUCTURE: 695 / 419, FACTS: 2741 / 53})
    book = PaceBook()
    book.set_prior(made, 8)
    assert book.model_load_s == 24.8 and book.pace(FACTS) == (pytest.approx(2741 / 53), "prior")
    assert prior_from({"messages": 0}, 8) == {} and PaceBook().pace(FACTS) is None


def test_before_any_unit_finishes_the_range_is_the_priors_wide_one():
    clock = Clock()
    book = PaceBook(prior={FACTS: 2.0})
    countdown = book.countdown(FACTS, clock)
    countdown.update(0, 10)
    assert countdown.left() == pytest.approx((10.0, 30.0))  # 20 s ± 50 %
    assert left_text(countdown) == " · about 10–30 s left at the example build's pace"
    assert left_text(PaceBook().countdown(FACTS, clock)) == "", "no pace known: no time stated"
    countdown.update(10, 10)
    assert left_text(countdown) == " · finishing", "every unit counted: no time is stated"


def test_the_jobs_own_pace_leaves_its_start_out_and_narrows():
    clock = Clock()
    countdown = PaceBook(prior={FACTS: 100.0}).countdown(FACTS, clock)
    countdown.update(0, 20)
    clock.now = 30.0  # models loading: the first unit finishes late
    countdown.update(1, 20)
    for done in range(2, 12):
        clock.now += 5.0
        countdown.update(done, 20)
    low, high = countdown.left()
    middle = 5.0 * 9  # 9 units left at 5 s each (startup excluded: 80 s / 11 done would say 65 s)
    width = max(FLOOR, SPREAD / 10 ** 0.5)  # ten units measured: as narrow as a drifting pace allows
    assert (low + high) / 2 == pytest.approx(middle) and high / middle - 1 == pytest.approx(width)
    assert countdown.basis() == "at this job's pace"
    clock.now += 2.0  # the unit under way has run 2 s
    assert countdown.left()[1] == pytest.approx((middle - 2.0) * (1 + width))


def test_a_finished_jobs_pace_is_the_next_jobs_estimate():
    clock = Clock()
    book = PaceBook(prior={STRUCTURE: 1.0})
    first = book.countdown(STRUCTURE, clock)
    for done in range(0, 6):
        first.update(done, 5)
        clock.now += 3.0
    first.finish()
    second = book.countdown(STRUCTURE, clock)
    second.update(0, 10)
    assert book.pace(STRUCTURE) == (pytest.approx(3.0), "measured") and second.basis() == "at this server's last pace"
    assert second.left() == pytest.approx((30.0 * (1 - SPREAD), 30.0 * (1 + SPREAD)))


def test_on_a_noisy_extraction_the_stated_time_is_within_30_percent_from_the_tenth_batch_on():
    """75 batches, a slow start (models loading, first prefixes), then about 35 s a batch with noise
    (batch sizes differ): from the tenth batch on, the middle of the stated range lies within ±30 % of
    the time actually left."""
    rng = random.Random(0)
    times = [300.0]
    for _ in range(74):
        times.append(times[-1] + rng.uniform(20.0, 50.0))
    clock = Clock()
    countdown = PaceBook(prior={FACTS: 52.0}).countdown(FACTS, clock)
    countdown.update(0, 75)
    for done, at in enumerate(times[:-1], start=1):
        clock.now = at
        countdown.update(done, 75)
        if done >= 10:
            low, high = countdown.left()
            actual = times[-1] - at
            assert abs((low + high) / 2 - actual) <= 0.3 * actual, (done, low, high, actual)
            assert low <= actual * 1.05 and high >= actual * 0.95


def test_durations_read_as_a_person_reads_a_wait():
    assert [duration(s) for s in (3, 42, 130, 1820, 4300)] == ["5 s", "40 s", "2 min", "30 min", "1 h 12 min"]


def test_batches_that_finish_a_wave_at_a_time_are_counted_by_waves():
    """Extraction generates eight batches together: they finish within seconds of each other after a
    long wait, and a wave's time grows with its batches. The countdown reads waves and counts units:
    while a wave's batches arrive, only the rest of that wave and the batches after it are left; the
    second wave's pace is read from its wait after the first wave ended (the first wave holds the
    start); a last wave of four batches takes half a full one."""
    clock = Clock()
    countdown = PaceBook(prior={FACTS: 50.0}).countdown(FACTS, clock, wave=8)
    countdown.update(0, 20)
    assert countdown.left() == pytest.approx((20 * 50 * 0.5, 20 * 50 * 1.5))  # twenty batches at the prior
    times = {}
    for wave, end in ((0, 600.0), (8, 1000.0)):  # two full waves: 600 s (with the start), then 400 s
        for k in range(1, 9):
            clock.now = end - (8 - k) * 5.0  # the wave's batches arrive 5 s apart
            countdown.update(wave + k, 20)
            times[wave + k] = countdown.left()
    assert sum(times[3]) / 2 == pytest.approx(12 * 50.0), "a finishing first wave: its twelve followers at the prior"
    second = (365.0 + 7 * 5.0) / 8  # waited 365 s after the first wave for its first batch, then 5 s apart
    assert sum(times[11]) / 2 == pytest.approx(5 * 5.0 + 4 * second), "the rest of this wave, then four batches"
    assert countdown.basis() == "at this job's pace"
    assert sum(times[16]) / 2 == pytest.approx(4 * 400.0 / 8), "a last wave of four batches: half a full one"
    clock.now = 1100.0
    countdown.update(17, 20)  # the last wave (four batches) is arriving
    assert sum(countdown.left()) / 2 == pytest.approx(3 * 5.0)


def test_the_countdown_stands_still_while_the_job_waits_for_the_model():
    """A chat answer served before the extraction's next call: the stated time does not count down (no
    work was done), and the pace is not charged the wait."""
    clock, paused = Clock(), {"s": 0.0}
    countdown = PaceBook(prior={FACTS: 100.0}).countdown(FACTS, clock, paused=lambda: paused["s"])
    countdown.update(0, 20)
    for done in range(1, 6):
        clock.now += 10.0
        countdown.update(done, 20)
    before = countdown.left()
    clock.now += 30.0
    paused["s"] += 30.0  # the whole 30 s in line behind a chat answer
    assert countdown.left() == pytest.approx(before), "no work done: the same time left"
    clock.now += 10.0
    countdown.update(6, 20)
    assert countdown.pace()[0] == pytest.approx(10.0), "the wait is not charged to the pace"


def test_a_jobs_time_in_line_is_counted():
    import threading
    import time

    from memsif.locks import FairLock, job, waited

    lock, ready, go = FairLock(), threading.Event(), threading.Event()

    def hold():
        with job("ns-busy", "structure"), lock:
            ready.set()
            go.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    ready.wait(5)
    before = waited("ns-pace")

    def extraction():
        with job("ns-pace", "facts"), lock:
            pass

    waiting = threading.Thread(target=extraction)
    waiting.start()
    time.sleep(0.3)
    go.set()
    waiting.join(5)
    holder.join(5)
    assert waited("ns-pace") - before >= 0.25


def test_after_a_lone_first_batch_the_second_waves_first_arrival_gives_the_pace():
    """CoreFact extraction reads its first batch alone, then eight at a time: the lone batch costs more per
    batch than a group's (it shares no generation), so once the second wave's first batch arrives, its wait
    spread over the wave's eight batches is the pace, not the lone batch's time."""
    clock = Clock()
    countdown = PaceBook(prior={FACTS: 50.0}).countdown(FACTS, clock, wave=8, first_wave=1)
    countdown.update(0, 22)
    clock.now = 14.0
    countdown.update(1, 22)  # the lone first batch: 14 s
    assert countdown.basis() == "at this job's first wave"
    clock.now = 80.0
    countdown.update(2, 22)  # the second wave (batches 2–9) generated together in 66 s
    assert countdown.basis() == "at this job's pace"
    per_batch = 66.0 / 8
    assert sum(countdown.left()) / 2 == pytest.approx(7 * 0.0 + 13 * per_batch)  # its rest at once, then 13 batches


def test_a_build_that_publishes_its_workload_is_counted_in_judge_prompt_characters():
    """Messages the rules place cost nothing; the time left is seconds per judge prompt character sent so far,
    times the characters expected for the messages not yet placed (``interaction.forecast``)."""
    from memsif.interaction.forecast import Workload

    clock = Clock()
    expected = [0, 400, 0, 0, 200, 0, 0, 0, 600, 0, 0, 300]  # judge prompts the forecast expects (0: a rule)
    work = Workload(expected)
    countdown = PaceBook(prior={STRUCTURE: 10.0}).countdown(STRUCTURE, clock, work=lambda: work)
    countdown.update(0, len(expected))
    clock.now = 3.0  # the start: models, embeddings
    countdown.update(1, len(expected))
    assert countdown.basis() == "at the example build's pace", "no judge call measured yet"
    for done in range(2, 6):
        if expected[done - 1]:  # the message's judge call: 1 s per 100 characters
            clock.now += expected[done - 1] / 100
            work.sent, work.calls = work.sent + expected[done - 1], work.calls + 1
        countdown.update(done, len(expected))
    low, high = countdown.left()
    assert (low + high) / 2 == pytest.approx((600 + 300) / 100)  # the two calls still expected, at 1 s / 100 chars
    message_pace = (clock.now - 3.0) / 4 * (len(expected) - 5)  # what a pace per message would say
    assert message_pace == pytest.approx(10.5) and (low + high) / 2 != pytest.approx(message_pace)
    clock.now += 2.0  # no message placed for 2 s where the rules were expected to place it at once: a stall,
    assert (sum(countdown.left()) / 2) == pytest.approx(9.0 + 2.0)  # whose wait grows by what it has overrun


def test_the_next_judge_call_under_way_counts_down_and_a_workload_of_another_count_is_not_used():
    from memsif.interaction.forecast import Workload

    clock = Clock()
    work = Workload([0, 300, 500, 0])
    countdown = PaceBook().countdown(STRUCTURE, clock, work=lambda: work)
    countdown.update(1, 4)
    clock.now, work.sent, work.calls = 3.0, 300, 1
    countdown.update(2, 4)
    assert sum(countdown.left()) / 2 == pytest.approx(5.0)  # the next message's 500 characters at 1 s / 100
    clock.now += 2.0  # 2 s into it
    assert sum(countdown.left()) / 2 == pytest.approx(3.0)
    other = PaceBook().countdown(STRUCTURE, clock, work=lambda: Workload([0, 300, 500]))  # another call's messages
    other.update(1, 4)
    clock.now += 1.0
    other.update(2, 4)
    assert sum(other.left()) / 2 == pytest.approx(2.0), "a message pace: 1 s for one message, 2 left"


def test_before_its_first_judge_call_a_build_is_not_said_to_be_nearly_done():
    """Messages the rules place take no time: until a judge call is measured, the pace per character of this
    server's last build counts, else the book's pace per message, else no time is stated (never ~0 s)."""
    from memsif.interaction.forecast import Workload

    clock = Clock()
    expected = [0] * 12 + [500, 0, 500, 0]
    book = PaceBook()
    first = book.countdown(STRUCTURE, clock, work=lambda: Workload(expected))
    for done in range(1, 13):  # twelve messages placed by rule, in a blink
        clock.now += 0.001
        first.update(done, len(expected))
    assert first.left() is None and left_text(first) == "", "no pace known: no time stated, not 0 s"
    book.prior[STRUCTURE] = 0.5
    assert first.left() == pytest.approx((0.5 * 4 * 0.5, 0.5 * 4 * 1.5))  # the prior per message, ±50 %
    assert first.basis() == "at the example build's pace"
    work = Workload(expected)
    job = book.countdown(STRUCTURE, clock, work=lambda: work)
    job.update(1, len(expected))
    for done in range(2, 17):
        if expected[done - 1]:
            clock.now += 5.0  # 1 s per 100 characters
            work.sent, work.calls = work.sent + expected[done - 1], work.calls + 1
        job.update(done, len(expected))
    job.finish()
    later = book.countdown(STRUCTURE, clock, work=lambda: Workload(expected))
    later.update(1, len(expected))
    later.update(12, len(expected))
    assert sum(later.left()) / 2 == pytest.approx(10.0) and later.basis() == "at this server's last pace"


def test_a_stalled_wave_makes_the_wait_grow_instead_of_standing_still():
    """Batch 17 of 37 not moving for minutes must not leave "5–7 min left" on the page: past its expected
    time the wave under way counts as long again as it has overrun, and the batches after it at no faster
    a pace than its own so far."""
    clock = Clock()
    countdown = PaceBook().countdown(FACTS, clock, wave=1)
    for done in range(4):  # 10 s a batch
        countdown.update(done, 10)
        clock.now += 10.0
    countdown.update(4, 10)
    on_time = sum(countdown.left()) / 2
    assert on_time == pytest.approx(6 * 10.0)
    clock.now += 5.0  # halfway through batch 5
    assert sum(countdown.left()) / 2 == pytest.approx(5.0 + 5 * 10.0)
    stalls = []
    for _ in range(3):
        clock.now += 20.0
        stalls.append(sum(countdown.left()) / 2)
    assert stalls == sorted(stalls) and stalls[0] > on_time, stalls
    assert stalls[-1] == pytest.approx(55.0 + 5 * 65.0)  # batch 5 ran 65 s of its 10; 5 batches after it at 65 s


def test_the_example_builds_titles_give_their_own_prior_and_leave_the_batches():
    from memsif.inspector.pace import TITLES, prior_from
    provenance = {"messages": 400, "segments": 50, "core_facts_seconds": 1100, "titles_seconds": 100}
    prior = prior_from(provenance, 8)
    assert prior[FACTS] == pytest.approx(1000 / 50) and prior[TITLES] == pytest.approx(100 / 50)
    assert TITLES not in prior_from({**provenance, "titles_seconds": None}, 8)  # built before titles were timed
    assert prior_from({**provenance, "titles_seconds": None}, 8)[FACTS] == pytest.approx(1100 / 50)


def test_every_stage_of_a_corefact_job_states_its_wait():
    """The page's CoreFact status line in each stage of the job, the model loading, the batches, the second
    pass and the model's segment titles, says how long is left (a prior before the job has its own pace)."""
    from memsif.inspector.common import JobProgress
    from memsif.inspector.corefacts import FactsJobClock
    from memsif.inspector.pace import TITLES

    clock = Clock()
    book = PaceBook(prior={FACTS: 20.0, TITLES: 6.0})
    job = FactsJobClock(batches=book.countdown(FACTS, clock, wave=2, first_wave=1),
                        second=book.countdown(FACTS, clock, wave=2), titles=book.countdown(TITLES, clock))
    stages = [JobProgress(0, 0, "starting"), JobProgress(0, 9, "core facts"), JobProgress(3, 9, "core facts"),
              JobProgress(0, 2, "core facts, second pass"), JobProgress(0, 40, "titles"), JobProgress(12, 40, "titles")]
    for state in stages:
        line = job.status(state, clock.now, "ns", 8)
        assert " left " in line or " the first in about " in line, line
        clock.now += 30.0
    assert "Titling the Topical Segments with the model: 12 of 40" in line and "Every CoreFact is written" in line
