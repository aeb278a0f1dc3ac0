"""The real packaged models through the real code path, on a few sessions of conv-26."""

import pytest

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.entities import SpacyEntityExtractor
from memsif.io import load_transcripts
from memsif.records import BoundaryRule
from memsif.store import MemoryStore
from tests.conftest import EXAMPLE

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def built():
    [conv] = load_transcripts(EXAMPLE, sample="conv-26")
    sessions = {"session_1", "session_2"}
    messages = [m for m in conv.messages if m.session_id in sessions]
    engine = MemSIF(MemSIFConfig.from_env(), store=MemoryStore(in_memory=True))
    engine.load_models()
    report = engine.ingest(messages, namespace="conv-26")
    yield engine, report, messages
    engine.close()


def test_real_models_build_structured_interaction_memory(built):
    engine, report, messages = built
    assert isinstance(engine.entity_extractor, SpacyEntityExtractor)
    assert report.messages == len(messages) and report.judge_errors == 0
    segments = engine.segments("conv-26")
    assert 1 < len(segments) < len(messages)
    assert [mid for s in segments for mid in s.message_ids] == [m.id for m in messages]
    trajectories = engine.trajectories("conv-26")
    assert sorted(sid for t in trajectories for sid in t.segment_ids) == sorted(s.id for s in segments)


def test_real_decisions_are_recorded_with_scores(built):
    engine, report, messages = built
    decisions = engine.decisions("conv-26", "segment")
    assert len(decisions) == len(messages)
    judged = [d for d in decisions if d.rule == BoundaryRule.JUDGE]
    assert len(judged) == report.judge_calls_segment > 0
    for d in judged:
        assert 0.0 < d.judge_prob < 1.0
        assert d.score.jaccard >= 0.0 and 0.0 <= d.score.s_sem <= 1.0
    # the judge sees both answers as plausible: not a constant
    assert len({round(d.judge_prob, 3) for d in judged}) > 1
    assert any(d.score.jaccard > 0 for d in decisions if d.score)
    for d in engine.decisions("conv-26", "trajectory"):
        assert all(c.judge_prob is None or 0.0 < c.judge_prob < 1.0 for c in d.candidates)


def test_real_models_build_core_facts_and_answer_with_a_trace(built):
    engine, report, messages = built
    assert sum(report.fact_ops.values()) > 0 and report.fact_llm_calls > 0
    facts = engine.facts("conv-26")
    ids = {m.id for m in messages}
    for fact in facts:
        assert fact.type in ("Identity", "Event", "Preference", "Relation")
        assert fact.source_message_ids and set(fact.source_message_ids) <= ids
    log = engine.fact_log("conv-26")
    assert len(log) == sum(report.fact_ops.values())
    result = engine.ask("What did Caroline research?", namespace="conv-26")
    assert result.answer.strip()
    assert result.facts_used or result.evidence_used
    assert result.tokens_in > 0 and result.tokens_out > 0
    assert result.sufficiency_prob is None or 0.0 < result.sufficiency_prob < 1.0
    for e in result.evidence_used:
        assert set(e.source_message_ids) <= ids


def test_the_built_store_holds_only_grounded_core_facts(built):
    """Scan what the real default models stored: every CoreFact (history too) passes the grounding
    gate again and was verified by the model; no subject is a sentence, no statement a bare date, no
    JSON debris; each REJECT in the log names its candidate and its reasons."""
    import re

    from memsif.facts.grounding import check

    engine, report, messages = built
    by_id = {m.id: m for m in messages}
    speakers = sorted({m.speaker for m in messages})
    for fact in engine.facts("conv-26", history=True):
        verdict = check(fact.subject, fact.statement, [by_id[i] for i in fact.source_message_ids], speakers)
        assert verdict.passed, (fact.statement, verdict.reason)
        assert len(fact.subject.split()) <= 4 and not re.search(r"[.!?,]", fact.subject)
        assert not re.fullmatch(r"[\d\s]*[A-Za-z]*\s*\d{4}\.?", fact.statement.strip())
        assert not re.search(r'[{}\[\]"]', fact.subject + fact.statement)
    rejects = engine.fact_log("conv-26", op="reject")
    assert len(rejects) == report.fact_ops.get("REJECT", 0)
    for op in rejects:
        assert op.reason.startswith(("not grounded in ", "not verified against ")), op.reason
        assert op.candidate.statement and not op.fact_ids
    for fact in engine.facts("conv-26"):  # the packaged 1.5B is measured to verify: every stored fact passed
        assert fact.verified and fact.verification.p_yes >= fact.verification.min_p, fact.verification


def test_a_rent_that_went_up_supersedes_with_the_real_embedder():
    """The value-change rule against MiniLM's real similarities ("rent is 1,200 euros" / "went up to
    1,500 euros": 0.95, value-masked 0.90). The packaged 135M writes no grounded rent fact (its
    candidates are REJECTed), so the extraction is the fake a stronger model stands for."""
    from datetime import datetime

    from memsif.records import Message
    from tests.fakes import FakeLLM, grounded_extraction

    extract = grounded_extraction({
        "1,200": {"subject": "Alice", "type": "Identity", "statement": "Alice's rent is 1,200 euros a month."},
        "1,500": {"subject": "Alice", "type": "Identity", "statement": "Alice's rent went up to 1,500 euros a month."}})
    llm = FakeLLM({"core_extract": extract, "segment_judge": 0.5, "trajectory_judge": 0.5})
    engine = MemSIF(MemSIFConfig.from_env(), llm=llm, store=MemoryStore(in_memory=True))
    march, september = datetime(2024, 3, 3), datetime(2024, 9, 10)
    engine.ingest([Message(id="D1:1", namespace="rent", speaker="Alice", text="My rent is 1,200 euros a month.",
                           time=march, session_id="s1")], namespace="rent")
    report = engine.ingest([Message(id="D2:1", namespace="rent", speaker="Alice", time=september, session_id="s2",
                                    text="My landlord raised it: my rent went up to 1,500 euros a month.")],
                           namespace="rent")
    assert report.fact_ops == {"SUPERSEDE": 1}
    [current] = engine.facts("rent")
    assert "1,500" in current.statement and current.source_message_ids == ["D2:1"]
    [old] = [f for f in engine.facts("rent", history=True) if f.status == "superseded"]
    assert "1,200" in old.statement and old.superseded_by == current.id and old.valid_until == september
    op = engine.fact_log("rent", op="supersede")[0]
    assert op.decided_by == "rule" and "numbers changed (numbers 1200" in op.reason
    engine.close()


@pytest.mark.parametrize("first, said_first, later, said_later, old_type, new_type, superseded", [
    # the rent replay as the 1.5B wrote it: the first amount typed Identity, the change typed Event
    ("My rent is 1,200 euros a month.", "Alice's flat is 1,200 euros a month.",
     "My rent went up to 1,500 euros a month.", "Alice's rent went up to 1,500 euros a month.",
     "Identity", "Event", True),
    ("I work 40 hours a week.", "Alice works 40 hours a week.",
     "Now I only work 30 hours a week.", "Alice cut her working week to 30 hours.", "Identity", "Identity", True),
    # siblings that must stay: another quantity in the same units, and two occurrences
    ("My rent is 1,200 euros a month.", "Alice's rent is 1,200 euros a month.",
     "I earn 3,000 euros a month.", "Alice earns 3,000 euros a month.", "Identity", "Identity", False),
    ("I work 40 hours a week.", "Alice works 40 hours a week.",
     "I sleep 8 hours a day.", "Alice sleeps 8 hours a day.", "Identity", "Identity", False),
    ("I ran 10 km on Monday.", "Alice ran 10 km.", "I ran 15 km on Saturday.", "Alice ran 15 km.",
     "Event", "Event", False),
])
def test_a_changed_amount_supersedes_across_fact_types_with_the_real_embedder(
        first, said_first, later, said_later, old_type, new_type, superseded):
    """The quantity rule (facts.core.changed_quantity) against MiniLM's real similarities: the facts'
    source messages state an amount in a shared unit and make the same claim once the values are
    masked, whatever the facts' wording and types."""
    from datetime import datetime

    from memsif.records import Message
    from tests.fakes import FakeLLM, grounded_extraction

    extract = grounded_extraction({first: {"subject": "Alice", "type": old_type, "statement": said_first},
                                   later: {"subject": "Alice", "type": new_type, "statement": said_later}})
    llm = FakeLLM({"core_extract": extract, "segment_judge": 0.5, "trajectory_judge": 0.5})
    engine = MemSIF(MemSIFConfig.from_env(), llm=llm, store=MemoryStore(in_memory=True))
    engine.ingest([Message(id="D1:1", namespace="q", speaker="Alice", text=first, time=datetime(2024, 3, 3),
                           session_id="s1")], namespace="q")
    report = engine.ingest([Message(id="D2:1", namespace="q", speaker="Alice", text=later,
                                    time=datetime(2024, 9, 10), session_id="s2")], namespace="q")
    log = [(o.op.value, o.reason) for o in engine.fact_log("q")]
    if superseded:
        assert report.fact_ops == {"SUPERSEDE": 1}, log
        [op] = engine.fact_log("q", op="supersede")
        assert op.decided_by == "rule" and "the amount in" in op.reason and "D1:1 and D2:1" in op.reason
        [current] = engine.facts("q")
        assert current.source_message_ids == ["D2:1"]
    else:
        assert "SUPERSEDE" not in report.fact_ops and len(engine.facts("q")) == 2, log
    engine.close()


def test_extraction_prompts_give_valid_json_per_prompt(built):
    """The default model and back-end (llama.cpp's grammar for the 1.5B; transformers' left-padded
    batch with the JSON schema mask elsewhere): every reply of the real extraction prompt finishes
    and parses to the schema."""
    from memsif.facts.core import EXTRACT_MAX_TOKENS, CoreFactBuilder
    from memsif.llm import generate_many
    from memsif.llm.structured import parse_json_reply
    from memsif.prompts import core_extract
    from memsif.records import parse_schema

    engine, _, messages = built
    builder = CoreFactBuilder(engine.llm, engine.embedder, parse_schema(""))
    batches = [messages[0:12], messages[12:15], messages[15:27]]  # different prompt lengths
    prompts = [core_extract.build([("", m.speaker, m.text) for m in b], builder.extractor.schema) for b in batches]
    schema = builder.extractor.response_model.model_json_schema()
    together = generate_many(engine.llm, prompts, max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0,
                             json_schema=schema)
    assert len(together) == 3
    for gen in together:
        assert not isinstance(gen, Exception), gen
        assert gen.tokens_out < EXTRACT_MAX_TOKENS, f"cut off at the token cap: {gen.text[-200:]!r}"
        parse_json_reply(gen.text, builder.extractor.response_model)
        assert gen.tokens_in > 0
