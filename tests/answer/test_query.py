"""Query (§3.5) and the ActiveFact pipeline (§3.4) with a fake LLM keyed by prompt name."""

import json
from datetime import datetime

import pytest

from memsif.records import Message
from tests.fakes import TRUSTS_SUFFICIENCY, FakeLLM, KeywordEmbedder

MAY = datetime(2023, 5, 8)
# the gate's relevance floor is off here (the fake embedder's cosines mean nothing); it has its own test
CFG = dict(core_facts=True, tau_split=0.0, tau_merge=0.01, sem_mapping="affine", trajectory_min_phi=1.0,
           gate_fact_floor=0.0)
FACTS = {"facts": [{"subject": "Melanie", "type": "Preference", "statement": "Melanie loves pottery.",
                    "sources": [1]}]}


def _messages():
    texts = ["I love pottery, I made a bowl last week.", "My kids and I went camping at the lake.",
             "We roasted marshmallows at the lake campfire.", "Pottery class is on Tuesdays."]
    return [Message(id=f"D1:{i + 1}", namespace="t", speaker="Melanie", text=t, time=MAY, session_id="s1")
            for i, t in enumerate(texts)]


def _engine(engine_factory, sufficient: float, **kw):
    llm = FakeLLM({"core_extract": json.dumps(FACTS), "core_operation": "A", "sufficiency": sufficient,
                   "answer": "Pottery."})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"pottery": 0, "lake": 1, "camp": 1}), **CFG, **kw)
    engine.ingest(_messages())
    return engine, llm


def test_fact_level_sufficient_question_never_touches_structured_interaction_memory(engine_factory, monkeypatch):
    engine, llm = _engine(engine_factory, sufficient=0.9, profile=TRUSTS_SUFFICIENCY)  # a model measured on the check
    searched = []
    for read in ("segments", "trajectories", "hybrid_search"):  # Structured Interaction Memory's reads
        original = getattr(engine.store, read)
        monkeypatch.setattr(engine.store, read, lambda *a, _read=read, _original=original, **k:
                            searched.append(_read) or _original(*a, **k))
    result = engine.ask("What does Melanie love?", namespace="t")
    assert result.sufficient and not result.traced_back
    assert searched == []
    assert result.answer == "Pottery."
    assert [f.id for f in result.facts_used][:1] == ["F1"] and result.evidence_used == []
    assert result.sufficiency_prob == pytest.approx(0.9)
    assert "Melanie: Melanie loves pottery." in llm.calls["answer"][0].text
    assert result.tokens_in > 0 and result.tokens_out > 0 and result.seconds > 0
    assert 0 < result.first_token_seconds <= result.seconds


def test_insufficient_facts_trace_back_and_feed_the_activefact_clusters(engine_factory):
    engine, llm = _engine(engine_factory, sufficient=0.1)
    first = engine.ask("Where did Melanie go camping?", namespace="t")
    assert not first.sufficient and first.traced_back
    sources = [e.source_message_ids[0] for e in first.evidence_used]
    assert "D1:2" in sources or "D1:3" in sources
    prompt = llm.calls["answer"][0].text
    assert "Conversation excerpts (oldest first):" in prompt
    if first.facts_used:  # the facts come after the excerpts, nearest the question
        assert prompt.index("Conversation excerpts") < prompt.index("Facts:") < prompt.index("Question:")
    clusters = engine.clusters("t")
    assert clusters and all(c.subject == "melanie" for c in clusters)
    assert engine.active_facts("t") == [] or all(c.score_qry >= 0.45 for c in clusters if c.active_fact_id)
    # The same demand asked differently accumulates query evidence; promotion needs both scores.
    engine.ask("Which lake did Melanie camp at with her kids?", namespace="t")
    clusters = engine.clusters("t")
    lake = max(clusters, key=lambda c: len(c.queries))
    assert len(lake.queries) == 2
    promoted = engine.active_facts("t")
    if lake.score_src >= 0.45 and lake.score_qry >= 0.45:
        assert lake.active_fact_id in {a.id for a in promoted}
    else:
        assert lake.active_fact_id is None


def test_query_local_evidence_is_not_stored_as_a_fact(engine_factory):
    engine, _ = _engine(engine_factory, sufficient=0.1)
    engine.ask("Where did Melanie go camping?", namespace="t")
    assert [f.id for f in engine.facts("t")] == ["F1"]  # CoreFacts unchanged by a question


def test_ask_unknown_namespace_and_empty_question(engine_factory):
    from memsif.errors import MemSIFError, NotFoundError

    engine, _ = _engine(engine_factory, sufficient=0.9)
    with pytest.raises(NotFoundError):
        engine.ask("hi?", namespace="nobody")
    with pytest.raises(MemSIFError, match="non-empty"):
        engine.ask("   ", namespace="t")


def test_a_fact_that_names_its_own_day_is_not_given_the_session_day_beside_it(engine_factory, monkeypatch):
    """A statement whose relative date was settled ("yesterday (7 May 2023)") is shown with that day
    only: the session's day beside it would be a second, conflicting date for the same event."""
    facts = {"facts": [{"subject": "Melanie", "type": "Event", "statement": "Melanie made a bowl yesterday.",
                        "sources": [1]},
                       {"subject": "Melanie", "type": "Preference", "statement": "Melanie loves pottery.",
                        "sources": [1]}]}
    llm = FakeLLM({"core_extract": json.dumps(facts), "core_operation": "A", "sufficiency": 0.9,
                   "answer": "Yesterday."})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"pottery": 0, "bowl": 0}), profile=TRUSTS_SUFFICIENCY,
                            **CFG)
    engine.ingest([Message(id="D1:1", namespace="t", speaker="Melanie", text="I love pottery, I made a bowl yesterday.",
                           time=MAY, session_id="s1")])
    assert {f.statement for f in engine.facts("t")} == {"Melanie made a bowl yesterday (7 May 2023).",
                                                       "Melanie loves pottery."}
    engine.ask("When did Melanie make a bowl?", namespace="t")
    lines = llm.calls["answer"][0].text.splitlines()
    assert "- Melanie: Melanie made a bowl yesterday (7 May 2023)." in lines, lines
    assert "- Melanie: Melanie loves pottery. (8 May 2023)" in lines, lines


def test_the_answer_check_refuses_below_its_threshold_with_its_score_and_the_closest_lines(engine_factory):
    llm = FakeLLM({"core_extract": json.dumps(FACTS), "core_operation": "A", "answer": "Pottery.",
                   "answer_check": 0.2})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"pottery": 0, "lake": 1, "camp": 1}), **CFG,
                            answer_check="model")
    engine.ingest(_messages())
    result = engine.ask("What colour is Melanie's pottery bowl?", namespace="t")
    assert result.not_stated and result.answer_check_prob == pytest.approx(0.2)
    assert "0.20 < 0.50" in result.answer_check_rule and not llm.calls["answer"]  # the model did not answer
    assert result.answer.startswith("I don't know: this memory does not state that. Closest in memory: ")
    assert result.closest and any("pottery" in line.lower() for line in result.closest)
    assert all(line in result.answer for line in result.closest) and "answer_check" in result.seconds_by_stage
    # the check is the answer prompt up to its question, with the yes/no question where "Answer:" stands
    [check] = llm.calls["answer_check"]
    assert check.text.startswith("Memory:\n" + result.context) and check.version == "answer_check/1"


def test_the_answer_check_lets_the_model_answer_at_or_above_its_threshold(engine_factory):
    llm = FakeLLM({"core_extract": json.dumps(FACTS), "core_operation": "A", "answer": "Pottery.",
                   "answer_check": 0.9})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"pottery": 0}), **CFG, answer_check="model")
    engine.ingest(_messages())
    result = engine.ask("What does Melanie love?", namespace="t")
    assert result.answer == "Pottery." and not result.not_stated and result.closest == []
    assert "0.90 ≥ 0.50: answered" in result.answer_check_rule
    assert llm.calls["answer"][0].text.split("Question:")[0] == llm.calls["answer_check"][0].text.split("Question:")[0]


def test_the_answer_check_is_not_asked_of_an_unmeasured_model_by_default_and_a_failure_answers(engine_factory):
    llm = FakeLLM({"core_extract": json.dumps(FACTS), "core_operation": "A", "answer": "Pottery."})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"pottery": 0}), **CFG)
    engine.ingest(_messages())
    result = engine.ask("What does Melanie love?", namespace="t")
    assert "not asked" in result.answer_check_rule and result.answer_check_prob is None
    assert not llm.calls["answer_check"]
    failing = FakeLLM({"core_extract": json.dumps(FACTS), "core_operation": "A", "answer": "Pottery."},
                      fail={"answer_check"})
    engine = engine_factory(llm=failing, embedder=KeywordEmbedder({"pottery": 0}), **CFG, answer_check="model")
    engine.ingest(_messages())
    result = engine.ask("What does Melanie love?", namespace="t")
    assert result.answer == "Pottery." and "answer check failed" in result.answer_check_rule
    assert any(e.startswith("answer check: LLMError") for e in result.errors)


def test_the_answer_context_puts_the_facts_last_nearest_the_question():
    """The evidence under its day headers first, then the facts best first: the small model follows what it
    read last (``answer.context.render_context``)."""
    from datetime import datetime

    from memsif.answer.context import render_context
    from memsif.records import Evidence

    evidence = [Evidence(subject="Nate", statement="I dyed my hair last week.", time=datetime(2022, 4, 15),
                         source_message_ids=["D1:1"], score=1.0)]
    context = render_context(["- Nate: Nate dyed his hair purple (the week before 15 April 2022)."], evidence)
    assert context.splitlines() == [
        "Conversation excerpts (oldest first):", "15 April 2022:",
        "- Nate: I dyed my hair last week [the week before 15 April 2022].",
        "Facts:", "- Nate: Nate dyed his hair purple (the week before 15 April 2022)."]
    assert render_context(["- Nate: x"], []) == "Facts:\n- Nate: x"
    assert render_context([], evidence).startswith("Conversation excerpts")


def test_a_stage_timed_twice_adds_its_seconds(monkeypatch):
    from memsif.answer import query

    ticks = iter([10.0, 10.5, 20.0, 21.0])
    monkeypatch.setattr(query.time, "perf_counter", lambda: next(ticks))
    result = query.Answer(question="q", answer="", sufficient=False, sufficiency_prob=None, traced_back=False)
    for _ in range(2):
        with query._stage(result, "answer"):
            pass
    assert result.seconds_by_stage == {"answer": pytest.approx(1.5)}
