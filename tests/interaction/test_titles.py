"""Titles of Topical Segments: the model's lines checked before they are kept, the model-free title,
the trajectory's name, and the title written when a segment closes (§3.2)."""

import numpy as np

from memsif.interaction.titles import TitleWriter, check_lines, key_term_title, quote_title, trajectory_name
from memsif.records import SegmentTitle
from tests.conftest import make_messages
from tests.fakes import FakeLLM, TableEntities

SEGMENT = [m.model_copy(update={"speaker": who}) for m, who in zip(make_messages([
    "I went to an adoption agency meeting yesterday, it was so inspiring!",
    "Wow Caroline, that's huge! Are you applying as a single parent?",
    "Yes, they help LGBTQ folks adopt. I also started building a library for the kids.",
]), ("Caroline", "Melanie", "Caroline"), strict=True)]


def _idf(stem: str) -> float:
    return {"adopt": 3.0, "agenc": 2.5, "librari": 2.0}.get(stem, 0.5)


def test_lines_that_name_a_speaker_and_say_what_the_segment_says_are_kept():
    kept, refused = check_lines("1. Caroline: adopting a child as a single parent\n- Melanie: library for the kids",
                                SEGMENT)
    assert kept == ["Caroline: adopting a child as a single parent", "Melanie: library for the kids"]
    assert refused == []


def test_chatty_wrong_or_copied_lines_are_refused_with_why():
    text = ("Here are the titles:\n"
            "Ana: starting a new job as a nurse\n"          # the prompt's example, a name not in the segment
            "Caroline: starting a new job as a nurse\n"     # the example under a real name
            "Melanie: congrats and thanks\n"             # greetings and praise only
            "Caroline: quantum physics homework\n"          # no word of it is in the segment
            "Melanie: Are you applying as a single parent?\n"  # a question
            "Caroline: " + "adoption " * 12 + "\n")         # too long
    kept, refused = check_lines(text, SEGMENT)
    assert kept == []
    reasons = "\n".join(refused)
    for why in ("not 'Name: matter'", "'Ana' is no speaker", "the prompt's example", "greetings and praise",
                "no word of it is in the segment", "a question", "12 words"):
        assert why in reasons


def test_at_most_three_lines_and_no_repeats():
    text = "\n".join(["Caroline: adoption agency", "caroline: Adoption agency", "Caroline: the kids' library",
                      "Melanie: single parent", "Caroline: LGBTQ folks adopt"])
    kept, _ = check_lines(text, SEGMENT)
    assert kept == ["Caroline: adoption agency", "Caroline: the kids' library", "Melanie: single parent"]


def test_the_model_free_title_names_the_speaker_and_the_most_specific_key_entities():
    entities = [frozenset({"adoption agency", "caroline"}), frozenset({"single parent", "caroline"}),
                frozenset({"library", "lgbtq", "kid"})]
    [line] = key_term_title(SEGMENT, entities, _idf, speakers=["Caroline", "Melanie"])
    who, terms = line.split(": ")
    assert who == "Caroline"
    assert "caroline" not in terms and terms.split(", ")[0] == "adoption agency"
    assert key_term_title(SEGMENT, [frozenset()] * 3, _idf) == []


def test_without_a_model_or_when_no_line_passes_the_title_is_model_free_and_says_so():
    entities = [frozenset({"adoption agency"})] * 3
    free = TitleWriter(None).title(SEGMENT, entities, _idf)
    assert free.source == "key terms" and free.model is None and free.lines
    llm = FakeLLM({"segment_title": "Ana: starting a new job as a nurse"})
    title = TitleWriter(llm).title(SEGMENT, entities, _idf)
    assert title.source == "key terms" and title.lines == free.lines
    assert title.prompt_version == "segment_title/1" and title.refused
    assert title.input_ids and set(title.input_ids) <= {m.id for m in SEGMENT}


def test_titles_are_asked_together_where_the_back_end_decodes_a_wave_and_a_failed_prompt_keeps_the_free_title():
    from memsif.errors import LLMError

    class WaveLLM(FakeLLM):
        def __init__(self) -> None:
            super().__init__({"segment_title": "Caroline: adopting a child as a single parent"})
            self.waves: list[int] = []

        def generate_batch(self, prompts, max_new_tokens=512, temperature=0.1, json_schema=None):
            self.waves.append(len(prompts))
            return [LLMError("the model failed") if k == 1 else self.generate(p) for k, p in enumerate(prompts)]

    entities = [frozenset({"adoption agency"})] * 3
    llm = WaveLLM()
    titles = TitleWriter(llm).titles([(SEGMENT, entities)] * 3, _idf)
    assert llm.waves == [3] and len(llm.calls["segment_title"]) == 2  # the second prompt failed
    assert [t.source for t in titles] == ["model", "key terms", "model"]
    assert titles[0].lines == ["Caroline: adopting a child as a single parent"] and titles[0].error is None
    assert titles[1].error == "LLMError: the model failed" and titles[1].lines == TitleWriter(None).title(
        SEGMENT, entities, _idf).lines


def _said(*pairs: tuple[str, str]):
    return [m.model_copy(update={"speaker": who}) for m, (who, _) in
            zip(make_messages([text for _, text in pairs]), pairs, strict=True)]


def test_a_segment_of_one_or_two_messages_is_titled_by_what_was_said_not_by_a_word_list():
    """A one-message segment's key terms are a word list no person would write ("Nate: guy, ton, lookl",
    "Joanna: woo, friday, relief"); its model-free title quotes its sentence that says most, as said, or it
    has none."""
    nate = _said(("Nate", "Hey! Guess what, the guy at the shop gave me a ton of old game cartridges for free."))
    assert quote_title(nate, ["Nate", "Joanna"]) == ['Nate: "Guess what, the guy at the shop…"']
    joanna = _said(("Joanna", "Woo, Friday! Such a relief."), ("Nate", "Haha yes"))
    assert quote_title(joanna, ["Nate", "Joanna"]) == ['Joanna: "Woo, Friday!"']
    assert quote_title(_said(("Nate", "Haha, thanks Joanna!! :)")), ["Nate", "Joanna"]) == []  # nothing said
    entities = [frozenset({"guy", "ton", "lookl"})]
    free = TitleWriter(None).title(nate, entities, _idf)
    assert free.source == "quote" and free.lines == ['Nate: "Guess what, the guy at the shop…"']
    refused = TitleWriter(FakeLLM({"segment_title": "Nate: quantum physics"})).title(nate, entities, _idf)
    assert refused.source == "quote" and refused.lines == free.lines and refused.refused
    longer = TitleWriter(None).title(SEGMENT, [frozenset({"adoption agency"})] * 3, _idf)
    assert longer.source == "key terms"  # three messages: key terms, as before


def test_a_failing_model_is_recorded_and_the_title_still_written():
    title = TitleWriter(FakeLLM(fail={"segment_title"})).title(SEGMENT, [frozenset({"adoption"})] * 3, _idf)
    assert title.error and "fake failure" in title.error
    assert title.source == "key terms"


def test_a_trajectory_is_named_by_the_title_line_its_segments_share():
    titles = [SegmentTitle(lines=["Melanie: camping trip", "Caroline: adoption agencies"], source="model"),
              SegmentTitle(lines=["Caroline: adoption council meeting"], source="model"), None]
    assert trajectory_name(titles) == "Caroline: adoption agencies"
    assert trajectory_name([None]) == ""


class SameVector:
    """Every text the same vector: every message continues the segment by rule."""

    name, dim = "same", 2

    def embed_documents(self, texts):
        return np.tile(np.array([1.0, 0.0], dtype=np.float32), (len(texts), 1))

    def embed_query(self, text):
        return np.array([1.0, 0.0], dtype=np.float32)


def test_each_closed_segment_is_titled_and_a_grown_one_titled_again(engine_factory):
    llm = FakeLLM({"segment_title": "Caroline: adoption agency meeting"})
    eng = engine_factory(llm=llm, embedder=SameVector(), entities=TableEntities(), segment_titles="model",
                         trajectory_link="rule")
    eng.ingest(SEGMENT[:2], namespace="ns")
    [seg] = eng.segments("ns")
    assert seg.title is not None and seg.title.message_count == 2 and seg.title.source == "model"
    assert seg.title.lines == ["Caroline: adoption agency meeting"]
    eng.ingest(SEGMENT, namespace="ns")
    [seg] = eng.segments("ns")
    assert seg.title.message_count == 3 == len(seg.message_ids)
    assert len(llm.calls["segment_title"]) == 2


def test_by_default_no_title_delays_a_fact_the_model_titles_after_every_corefact_batch(engine_factory):
    """``segment_titles="auto"`` with the rule link: model-free titles at close, the LLM's in the facts job,
    after every batch (no title delays a fact)."""
    llm = FakeLLM({"segment_title": "Caroline: adoption agency meeting"})
    eng = engine_factory(llm=llm, embedder=SameVector(), entities=TableEntities(), segment_titles="auto",
                         trajectory_link="rule")
    eng.ingest(SEGMENT, namespace="ns")
    [seg] = eng.segments("ns")
    assert seg.title.source == "key terms" and seg.title.model is None and not llm.calls["segment_title"]
    report = eng.build_core_facts("ns")
    [seg] = eng.segments("ns")
    assert seg.title.source == "model" and seg.title.lines == ["Caroline: adoption agency meeting"]
    assert "titles" in report.seconds_by_stage and len(llm.calls["segment_title"]) == 1
    eng.build_core_facts("ns")  # titled once: not asked again
    assert len(llm.calls["segment_title"]) == 1

    order: list[str] = []
    llm = FakeLLM({"segment_title": lambda p: order.append("title") or "Caroline: adoption agency meeting",
                   "core_extract": lambda p: order.append("batch") or '{"facts": []}'})
    eng = engine_factory(llm=llm, embedder=SameVector(), entities=TableEntities(), segment_titles="auto",
                         trajectory_link="rule", fact_batch_messages=1, fact_parallel=2)
    eng.ingest(SEGMENT, namespace="ns")
    eng.build_core_facts("ns")
    assert order == ["batch"] * order.count("batch") + ["title"] and order.count("batch") >= 2, order


def test_upgrade_titles_a_stored_one_message_segment_by_a_quote_and_leaves_the_rest(engine_factory, monkeypatch):
    """A store made before quote titles holds word lists for its one-message segments ("Nate: guy, ton"):
    ``upgrade`` rewrites those, once, and keeps model titles and longer segments' key terms."""
    from memsif.interaction import titles

    eng = engine_factory(llm=FakeLLM({"segment_judge": 0.0}), embedder=SameVector(), entities=TableEntities(),
                         segment_titles="rule", trajectory_link="rule", tau_split=0.99, tau_merge=1.0)
    monkeypatch.setattr(titles, "QUOTE_UP_TO", 0)  # as before: key terms for every segment
    said = [m.model_copy(update={"session_id": f"s{k}"}) for k, m in enumerate(_said(
        ("Nate", "Hey! Guess what, the guy at the shop gave me a ton of old game cartridges for free."),
        ("Joanna", "Woo, Friday! Such a relief."),
    ))]
    eng.ingest(said, namespace="ns")
    assert all(s.title.source == "key terms" for s in eng.segments("ns"))
    assert eng.upgrade("ns", ["quote_titles"]) == {"quote_titles": 2}
    assert [(s.title.source, s.title.lines) for s in eng.segments("ns")] == [
        ("quote", ['Nate: "Guess what, the guy at the shop…"']), ("quote", ['Joanna: "Woo, Friday!"'])]
    assert eng.upgrade("ns", ["quote_titles"]) == {"quote_titles": 0}, "a second run does nothing"
