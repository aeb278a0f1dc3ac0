"""CoreFact extraction and the four operations (§3.3), with a fake LLM keyed by prompt name."""

import json
from datetime import datetime

import pytest

from memsif.config import MemSIFConfig
from memsif.errors import ConfigError
from memsif.records import FactOp, Message
from tests.fakes import FakeLLM, KeywordEmbedder

MAY, AUGUST = datetime(2023, 5, 8, 13, 56), datetime(2023, 8, 14, 10, 0)
# Everything merges into one segment (φ ≥ 0.01) so no segment judge is needed.
CFG = dict(core_facts=True, tau_split=0.0, tau_merge=0.01, sem_mapping="affine", trajectory_min_phi=1.0)


def msg(mid: str, text: str, when: datetime, speaker: str = "Melanie") -> Message:
    return Message(id=mid, namespace="t", speaker=speaker, text=text, time=when, session_id=mid.split(":")[0])


def extraction(facts_by_phrase: dict[str, list[dict]]):
    """A fake core_extract reply: the facts of every phrase found in the prompt, as JSON."""
    def reply(prompt):
        facts = [f for phrase, fs in facts_by_phrase.items() if phrase in prompt.text for f in fs]
        return json.dumps({"facts": facts})
    return reply


SUSHI = {
    "I love sushi": [{"subject": "Melanie", "type": "Preference", "statement": "Melanie loves sushi.", "sources": [1]}],
    "prefer ramen": [{"subject": "Melanie", "type": "Preference",
                      "statement": "Melanie prefers ramen to sushi now.", "sources": [1]}],
}


def test_contradiction_supersedes_and_keeps_history(engine_factory):
    llm = FakeLLM({"core_extract": extraction(SUSHI), "core_operation": "D"})  # D = supersede fact 1
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"sushi": 0}), **CFG)
    first = engine.ingest([msg("D1:1", "I love sushi, it's my favourite food!", MAY)])
    assert first.fact_ops == {"ADD": 1} and first.core_facts == 1
    second = engine.ingest([msg("D2:1", "Honestly I prefer ramen to sushi now.", AUGUST)])
    assert second.fact_ops == {"SUPERSEDE": 1} and second.core_facts == 1
    [current] = engine.facts("t")
    assert current.statement == "Melanie prefers ramen to sushi now." and current.source_message_ids == ["D2:1"]
    history = engine.facts("t", history=True)
    old = next(f for f in history if f.id == "F1")
    assert old.status == "superseded" and old.superseded_by == current.id
    assert old.valid_until == AUGUST and old.valid_from == MAY
    log = engine.fact_log("t")
    assert [r.op for r in log] == ["ADD", "SUPERSEDE"]
    sup = log[1]
    assert sup.fact_ids == ["F1", "F2"] and sup.decided_by == "llm"
    assert sup.before[0].status == "current" and sup.after[0].status == "superseded"
    assert sup.scores.options["D"] == 1.0 and sup.prompt_version == "core_operation/1"
    # the operation prompt only showed the known fact by a small index
    assert "1. [Preference] Melanie: Melanie loves sushi." in llm.calls["core_operation"][0].text
    assert engine.fact_log("t", op="supersede", subject="melanie") == [sup]


@pytest.mark.parametrize(("letter", "op"), [("B", FactOp.UPDATE), ("C", FactOp.MERGE), ("A", FactOp.ADD)])
def test_update_merge_add_chosen_by_the_llm(engine_factory, letter, op):
    facts = {
        "I love sushi": [{"subject": "Melanie", "type": "Preference", "statement": "Melanie loves sushi.",
                          "sources": [1]}],
        "Salmon": [{"subject": "Melanie", "type": "Preference",
                    "statement": "Melanie loves sushi, salmon nigiri most of all.", "sources": [1]}],
    }
    llm = FakeLLM({"core_extract": extraction(facts), "core_operation": letter})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"sushi": 0}), **CFG)
    engine.ingest([msg("D1:1", "I love sushi!", MAY)])
    report = engine.ingest([msg("D2:1", "Salmon nigiri is the best sushi.", AUGUST)])
    assert report.fact_ops == {op.value: 1}
    current = engine.facts("t")
    if op == FactOp.ADD:
        assert [f.id for f in current] == ["F1", "F2"]
    else:
        [fact] = current
        assert fact.id == "F1" and fact.source_message_ids == ["D1:1", "D2:1"] and fact.event_time == AUGUST
        expected = "Melanie loves sushi, salmon nigiri most of all." if op == FactOp.UPDATE else "Melanie loves sushi."
        assert fact.statement == expected


def test_near_identical_statement_merges_by_rule_and_unrelated_adds_by_rule(engine_factory):
    facts = {"sushi": [{"subject": "Melanie", "type": "Preference", "statement": "Melanie loves sushi.",
                        "sources": [1]}],
             "dog": [{"subject": "Melanie", "type": "Relation", "statement": "Melanie has a dog named Max.",
                      "sources": [1]}]}
    llm = FakeLLM({"core_extract": extraction(facts)})  # no core_operation answer: the LLM must not be asked
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"sushi": 0}), **CFG)
    engine.ingest([msg("D1:1", "I love sushi, again tonight", MAY)])
    report = engine.ingest([msg("D2:1", "more sushi, I love it, and I have a dog named Max", AUGUST)])
    assert report.fact_ops == {"MERGE": 1, "ADD": 1}
    assert all(r.decided_by == "rule" for r in engine.fact_log("t"))
    assert "core_operation" not in llm.calls


def test_relative_date_is_resolved_against_the_session_date(engine_factory):
    facts = {"support group": [{"subject": "Caroline", "type": "Event",
                                "statement": "Caroline went to an LGBTQ support group yesterday.", "sources": [1]}]}
    llm = FakeLLM({"core_extract": extraction(facts)})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({}), **CFG)
    engine.ingest([msg("D1:1", "I went to a LGBTQ support group yesterday.", MAY, speaker="Caroline")])
    [fact] = engine.facts("t")
    assert fact.statement == "Caroline went to an LGBTQ support group yesterday (7 May 2023)."
    assert fact.event_time == MAY
    assert "yesterday [7 May 2023]" in llm.calls["core_extract"][0].text


def test_fenced_reply_is_recovered_and_bad_source_index_is_range_checked(engine_factory):
    reply = ('Here you go:\n```json\n{"facts": [{"subject": "Melanie", "type": "Identity", '
             '"statement": "Melanie is a painter.", "sources": [7]}]}\n```')
    llm = FakeLLM({"core_extract": reply})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({}), **CFG)
    engine.ingest([msg("D1:1", "I'm a painter, I paint every day.", MAY)])
    [fact] = engine.facts("t")
    assert fact.source_message_ids == ["D1:1"]
    [op] = engine.fact_log("t")
    assert "dropped source numbers outside 1..1: [7]" in op.reason and "provenance by similarity" in op.reason


@pytest.mark.parametrize("reply", ["", '{"facts": [{"subject": "Mel', "I found nothing worth noting."])
def test_empty_or_truncated_reply_is_a_recorded_error_not_an_empty_success(engine_factory, reply):
    llm = FakeLLM({"core_extract": reply})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({}), **CFG)
    report = engine.ingest([msg("D1:1", "I paint every day.", MAY)])
    assert report.fact_errors == 1 and report.fact_ops == {"NOOP": 1}
    [op] = engine.fact_log("t")
    assert op.op == "NOOP" and op.error.startswith("LLMOutputError")
    assert engine.facts("t") == []


def test_no_facts_is_a_recorded_noop_without_error(engine_factory):
    llm = FakeLLM({"core_extract": '{"facts": []}'})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({}), **CFG)
    report = engine.ingest([msg("D1:1", "ok!", MAY)])
    assert report.fact_ops == {"NOOP": 1} and report.fact_errors == 0


def test_complete_facts_are_recovered_from_a_cut_off_reply(engine_factory):
    reply = ('{"facts": [{"subject": "Melanie", "type": "Identity", "statement": "Melanie is a painter.", '
             '"sources": [1]}, {"subject": "Melanie", "type": "Event", "statement": "Melanie went to the mus')
    llm = FakeLLM({"core_extract": reply})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({}), **CFG)
    report = engine.ingest([msg("D1:1", "I'm a painter, I paint every day.", MAY)])
    assert report.fact_ops == {"ADD": 1} and report.fact_errors == 0
    [op] = engine.fact_log("t")
    assert "recovered 1 complete fact(s) from a cut-off reply" in op.reason


def test_a_statement_cut_off_at_the_length_limit_keeps_its_complete_sentences(engine_factory):
    from memsif.prompts.core_extract import STATEMENT_MAX_CHARS

    whole = "Caroline's necklace is a gift from her grandma in Sweden."
    cut = (whole + " She wears it every day because it stands for love, faith and strength, and it reminds her "
           "of home and of")[:STATEMENT_MAX_CHARS]
    run_on = ("Caroline volunteers at the youth center, which is an important part of her life, and she has made "
              "strong connections with the people there and the kids she guides every week")[:STATEMENT_MAX_CHARS]
    assert len(cut) == len(run_on) == STATEMENT_MAX_CHARS
    facts = {"necklace": [{"subject": "Caroline", "type": "Identity", "statement": cut, "sources": [1]},
                          {"subject": "Caroline", "type": "Event", "statement": run_on, "sources": [2]}]}
    engine = engine_factory(llm=FakeLLM({"core_extract": extraction(facts)}), embedder=KeywordEmbedder({}), **CFG)
    engine.ingest([msg("D1:1", "This necklace is a gift from my grandma in Sweden. I wear it every day.", MAY,
                       speaker="Caroline"),
                   msg("D1:2", "I volunteer at the youth center, an important part of my life.", MAY,
                       speaker="Caroline")])
    [fact] = engine.facts("t")
    assert fact.statement == whole
    added, refused = sorted(engine.fact_log("t"), key=lambda op: op.op)
    assert added.op == "ADD" and "kept the complete sentences of a statement cut off" in added.reason
    assert refused.op == "REJECT" and "cut off at the" in refused.reason


def test_json_debris_in_a_subject_is_dropped_with_a_recorded_error(engine_factory):
    import json as _json

    from tests.conftest import make_messages
    from tests.fakes import FakeLLM as _Fake

    reply = {"facts": [{"subject": "Ben (17 March 2024)},{", "type": "Identity", "statement": "I have a cat.",
                        "sources": [1]},
                       {"subject": "Ben", "type": "Identity", "statement": "Ben has a grey cat.", "sources": [1]}]}
    engine = engine_factory(llm=_Fake({"segment_judge": 0.5, "trajectory_judge": 0.5,
                                       "core_extract": _json.dumps(reply), "core_operation": "A"}), core_facts=True)
    engine.ingest(make_messages(["Ben: I have a grey cat named Pixel."]))
    assert [f.subject for f in engine.facts("t")] == ["Ben"]
    errors = [r for r in engine.fact_log("t") if r.error]
    assert len(errors) == 1 and "malformed subject" in errors[0].error and errors[0].op == "NOOP"


def test_corefacts_are_readable_batch_by_batch_and_an_interrupted_extraction_resumes(engine_factory):
    BATCH_MESSAGES = MemSIFConfig().fact_batch_messages
    hobbies = [f"hobby{k}" for k in range(3)]
    facts = {h: [{"subject": "Melanie", "type": "Preference", "statement": f"Melanie likes {h}.", "sources": [1]}]
             for h in hobbies}
    seen_while_extracting: list[list[str]] = []
    engine = None

    class Crash(BaseException):
        pass

    def reply(prompt):
        seen_while_extracting.append(sorted(f.statement for f in engine.facts("t")))
        if len(seen_while_extracting) == 3 and crash:
            raise Crash  # the process dies in the third batch
        return extraction(facts)(prompt)

    # one batch per hobby: the hobby is the first message, then filler
    messages = []
    for k, h in enumerate(hobbies):
        messages += [msg(f"D1:{k * BATCH_MESSAGES + 1}", f"I like {h}.", MAY)]
        messages += [msg(f"D1:{k * BATCH_MESSAGES + j}", f"Filler {k} {j}.", MAY) for j in range(2, BATCH_MESSAGES + 1)]
    crash = True
    engine = engine_factory(llm=FakeLLM({"core_extract": reply, "core_operation": "A"}),
                            embedder=KeywordEmbedder({h: i for i, h in enumerate(hobbies)}), **CFG, fact_parallel=1)
    engine.ingest(messages, core_facts=False)
    with pytest.raises(Crash):
        engine.build_core_facts("t")
    # what a reader saw before each batch: the facts of every finished batch
    assert seen_while_extracting == [[], ["Melanie likes hobby0."], ["Melanie likes hobby0.", "Melanie likes hobby1."]]
    crash = False
    report = engine.build_core_facts("t")
    assert len(seen_while_extracting) == 4, "finished batches were read again after the interruption"
    assert report.fact_ops == {"ADD": 1}
    assert sorted(f.statement for f in engine.facts("t")) == [f"Melanie likes {h}." for h in hobbies]
    assert [r.op for r in engine.fact_log("t")] == ["ADD", "ADD", "ADD"]


@pytest.mark.parametrize("parallel", [2, 3, 5])
def test_batches_extracted_together_give_the_same_facts_and_log_as_one_by_one(engine_factory, parallel):
    BATCH_MESSAGES = MemSIFConfig().fact_batch_messages
    phrases = {f"sport{k}": [{"subject": "Melanie", "type": "Preference", "statement": f"Melanie likes sport{k}.",
                              "sources": [1]}] for k in range(5)}
    messages = []
    for k in range(5):
        messages += [msg(f"D1:{k * BATCH_MESSAGES + 1}", f"I like sport{k}.", MAY)]
        messages += [msg(f"D1:{k * BATCH_MESSAGES + j}", f"Filler {k} {j}.", MAY) for j in range(2, BATCH_MESSAGES + 1)]
    logs = {}
    for p in (1, parallel):
        engine = engine_factory(llm=FakeLLM({"core_extract": extraction(phrases), "core_operation": "A"}),
                                embedder=KeywordEmbedder({f"sport{k}": k for k in range(5)}), **CFG, fact_parallel=p)
        report = engine.ingest(messages)
        logs[p] = ([(r.op, r.fact_ids, r.reason) for r in engine.fact_log("t")],
                   sorted(f.statement for f in engine.facts("t")), report.fact_llm_calls)
    assert logs[1] == logs[parallel]
    assert logs[1][2] == 5 and len(logs[1][1]) == 5


def test_extraction_batches_never_cross_a_session():
    from memsif.facts.core import unread_batches
    from memsif.records import TopicalSegment

    msgs = {f"D{s}:{i}": Message(id=f"D{s}:{i}", namespace="t", speaker="A", text="x", time=datetime(2024, s, 1),
                                 session_id=f"session_{s}") for s in (1, 2) for i in (1, 2, 3)}
    one = TopicalSegment(id="S1", namespace="t", index=0, message_ids=list(msgs))  # spans both sessions
    batches = unread_batches([one], msgs, batch_messages=8)
    assert [[m.id for m in b.messages] for b in batches] == [["D1:1", "D1:2", "D1:3"], ["D2:1", "D2:2", "D2:3"]]
    assert [b.read_upto for b in batches] == [{"S1": 3}, {"S1": 6}]


@pytest.mark.parametrize("mode", ["auto", "rules"])
def test_an_untrusted_model_is_not_asked_the_operation_and_the_candidate_is_added(engine_factory, mode):
    """The 1.5B and the 135M put about the same probability on every letter (benchmarks/quality/
    fact_operations.py): under "auto" a model not profiled to choose it is not asked, and a
    candidate that no rule decides is added beside the similar fact, the log saying why."""
    llm = FakeLLM({"core_extract": extraction(SUSHI), "core_operation": "D"})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"sushi": 0}), **CFG, fact_operation=mode)
    engine.ingest([msg("D1:1", "I love sushi, it's my favourite food!", MAY)])
    second = engine.ingest([msg("D2:1", "Honestly I prefer ramen to sushi now.", AUGUST)])
    assert second.fact_ops == {"ADD": 1} and second.core_facts == 2
    assert not llm.calls["core_operation"], "the model was not asked"
    [op] = [o for o in engine.fact_log("t") if o.fact_ids == ["F2"]]
    assert op.decided_by == "rule" and "operation choice not asked" in op.reason and "beside F1" in op.reason


def test_fact_operation_must_be_a_known_mode():
    with pytest.raises(ConfigError, match="fact_operation must be one of"):
        MemSIFConfig(fact_operation="llm")


def test_claims_are_checked_before_the_model_and_logged_with_the_operation(engine_factory):
    facts = {"blog": [{"subject": "Melanie", "type": "Event", "statement": "Melanie started her blog about coding.",
                       "sources": [1]},
                      {"subject": "Melanie", "type": "Event", "statement": "Melanie adopted a dog named Max.",
                       "sources": [1]}]}
    llm = FakeLLM({"core_extract": extraction(facts)})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"blog": 0, "dog": 1}), **CFG, fact_second_pass=False)
    report = engine.ingest([msg("D1:1", "Wow, starting a blog about coding is awesome! I adopted a dog named Max.",
                                MAY)])
    assert report.fact_ops == {"REJECT": 1, "ADD": 1}
    reject, add = sorted(engine.fact_log("t"), key=lambda r: r.op.value, reverse=True)
    assert reject.op == "REJECT" and reject.decided_by == "rule" and "refused by the claim rules" in reject.reason
    assert reject.candidate.statement == "Melanie started her blog about coding."
    [claim] = reject.claims
    assert not claim.passed and claim.rule == "who did it" and claim.doer == "generic"
    assert claim.message_id == "D1:1" and claim.sentence.startswith("Wow, starting a blog")
    assert add.op == "ADD" and [c.passed for c in add.claims] == [True]
    assert add.claims[0].sentence == "I adopted a dog named Max."


def test_a_batch_with_a_refused_candidate_is_extracted_again_about_its_writer_and_the_new_facts_say_so(
        engine_factory):
    """The refusal class the first pass makes most (conv-30: "Jon's store is a dance studio." from Gina's
    message): a fact taken from another speaker's message. The second pass asks about that writer."""
    from memsif.prompts import core_extract

    swapped = {"subject": "Melanie", "type": "Event", "statement": "Melanie started a blog about coding.",
               "sources": [2]}
    dog = {"subject": "Melanie", "type": "Event", "statement": "Melanie adopted a dog named Max.", "sources": [1]}
    blog = {"subject": "Caroline", "type": "Event", "statement": "Caroline started a blog about coding.",
            "sources": [2]}

    def reply(prompt):
        again = prompt.version == core_extract.AGAIN_VERSION
        return json.dumps({"facts": [swapped, dog, blog] if again else [swapped, dog]})

    llm = FakeLLM({"core_extract": reply})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"blog": 0, "dog": 1}), **CFG, fact_second_pass=True)
    engine.ingest([msg("D1:1", "I adopted a dog named Max.", MAY),
                   msg("D1:2", "I just started a blog about coding!", MAY, speaker="Caroline")])
    first, second = llm.calls["core_extract"]
    assert first.version == core_extract.VERSION and second.version == core_extract.AGAIN_VERSION
    assert second.text.startswith(first.text.removesuffix("\nAnswer:")), "the first prompt is its prefix"
    assert "Already kept:\n- Melanie adopted a dog named Max." in second.text
    assert "more facts about Caroline," in second.text and "Melanie started a blog" not in second.text
    log = engine.fact_log("t")
    assert [(o.op.value, o.extraction_pass) for o in log] == [
        ("REJECT", 1), ("ADD", 1), ("REJECT", 2), ("NOOP", 2), ("ADD", 2)]
    assert log[2].reason.startswith("repeats a statement the first pass refused: none of D1:2 is by Melanie")
    assert log[3].reason == "repeats a statement the first pass kept"
    assert sorted(f.statement for f in engine.facts("t")) == ["Caroline started a blog about coding.",
                                                             "Melanie adopted a dog named Max."]
    assert log[4].after[0].source_message_ids == ["D1:2"] and log[4].batch == log[0].batch
    from memsif.viz import op_rows

    assert [row[3] for row in op_rows(log)] == ["rule", "rule", "rule, second pass", "rule, second pass",
                                               "rule, second pass"], "the log table says which pass wrote it"


def test_no_second_pass_when_every_cited_writer_kept_a_fact_or_when_it_is_off(engine_factory):
    swapped = {"subject": "Melanie", "type": "Event", "statement": "Melanie started a blog about coding.",
               "sources": [2]}
    dog = {"subject": "Melanie", "type": "Event", "statement": "Melanie adopted a dog named Max.", "sources": [1]}
    blog = {"subject": "Caroline", "type": "Event", "statement": "Caroline started a blog about coding.",
            "sources": [2]}
    for facts, second_pass, calls in (([dog], True, 1), ([swapped, dog, blog], True, 1), ([swapped, dog], False, 1),
                                      ([swapped, dog], True, 2)):
        llm = FakeLLM({"core_extract": json.dumps({"facts": facts})})
        engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"blog": 0, "dog": 1}), **CFG,
                                fact_second_pass=second_pass)
        engine.ingest([msg("D1:1", "I adopted a dog named Max.", MAY),
                       msg("D1:2", "I just started a blog about coding!", MAY, speaker="Caroline")])
        assert len(llm.calls["core_extract"]) == calls, (facts, second_pass)


def test_a_second_pass_an_interrupted_run_owes_is_found_from_the_log_and_old_logs_owe_none(engine_factory):
    from memsif.facts.core import owed_second_passes

    swapped = {"subject": "Melanie", "type": "Event", "statement": "Melanie started a blog about coding.",
               "sources": [2]}
    dog = {"subject": "Melanie", "type": "Event", "statement": "Melanie adopted a dog named Max.", "sources": [1]}
    llm = FakeLLM({"core_extract": json.dumps({"facts": [swapped, dog]})})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"blog": 0, "dog": 1}), **CFG, fact_second_pass=True)
    engine.ingest([msg("D1:1", "I adopted a dog named Max.", MAY),
                   msg("D1:2", "I just started a blog about coding!", MAY, speaker="Caroline")])
    log, segments = engine.fact_log("t"), engine.segments("t")
    messages = {m.id: m for m in engine.messages("t")}
    assert owed_second_passes(log, segments, messages) == [], "the second pass ran"
    first_pass = [op for op in log if op.extraction_pass == 1]
    [(batch, notes)] = owed_second_passes(first_pass, segments, messages)
    assert [m.id for m in batch.messages] == ["D1:1", "D1:2"] and batch.key == first_pass[0].batch
    assert notes.writers == ["Caroline"] and batch.read_upto == {}
    old = [op.model_copy(update={"extraction_pass": None}) for op in first_pass]
    assert owed_second_passes(old, segments, messages) == [], "a log written without the second pass owes none"


def test_corefact_extraction_tells_the_llm_its_job_by_the_handle_it_calls(engine_factory):
    """The CoreFact step calls the back-end's "facts" handle (llama.cpp: a context of its own); a question
    calls the back-end itself."""
    asked_for: list[str] = []

    class Serving(FakeLLM):
        def for_job(self, kind):
            asked_for.append(kind)
            return self

    facts = {"facts": [{"subject": "Ana", "type": "Preference", "statement": "Ana loves pottery.", "sources": [1]}]}
    llm = Serving({"core_extract": json.dumps(facts), "core_operation": "A", "answer": "Pottery."})
    engine = engine_factory(llm=llm, core_facts=True)
    engine.ingest([Message(id="1", namespace="t", speaker="Ana", text="I love pottery.", time=datetime(2023, 5, 8))])
    assert asked_for == ["facts"] and llm.calls["core_extract"]
    engine.ask("What does Ana love?", namespace="t")
    assert asked_for == ["facts"]


def test_the_first_batchs_facts_are_written_after_one_extraction_then_batches_go_in_groups(engine_factory):
    """The first batch is extracted alone, so a reader sees CoreFacts after one extraction call instead of
    a whole group's; the rest go ``fact_parallel`` at a time (the extraction prompt's fixed part read once)."""
    batch_messages = MemSIFConfig().fact_batch_messages
    seen_at_call: list[int] = []
    engine = None

    def reply(prompt):
        seen_at_call.append(len(engine.facts("t")))
        return json.dumps({"facts": [{"subject": "Melanie", "type": "Preference",
                                      "statement": f"Melanie likes hobby{len(seen_at_call)}.", "sources": [1]}]})

    messages = [msg(f"D1:{k + 1}", f"I like hobby{k // batch_messages + 1}.", MAY) for k in range(5 * batch_messages)]
    engine = engine_factory(llm=FakeLLM({"core_extract": reply, "core_operation": "A"}),
                            embedder=KeywordEmbedder({f"hobby{k}": k for k in range(1, 6)}), **CFG, fact_parallel=3)
    engine.ingest(messages, core_facts=False)
    engine.build_core_facts("t")
    assert seen_at_call == [0, 1, 1, 1, 4], "batch 1 alone, then 2-4 together, then 5"


@pytest.mark.parametrize("parallel", [1, 3, 8])
@pytest.mark.parametrize("n", [0, 1, 2, 4, 9])
def test_every_batch_is_extracted_once_in_order_whatever_the_group_size(n, parallel):
    from memsif.facts.core import FactState, ReadBatch, build_core_facts

    groups: list[list[str]] = []

    class Builder:
        second_pass = False

        def extract_many(self, namespace, batches, *args, **kwargs):
            groups.append([b[0].id for b in batches])
            return [([], []) for _ in batches]

    import numpy as np

    batches = [ReadBatch([msg(f"D1:{k + 1}", "hi", MAY)]) for k in range(n)]
    vectors = {f"D1:{k + 1}": np.zeros(3) for k in range(n)}
    done = list(build_core_facts(Builder(), FactState.of([]), "t", batches, {}, {}, vectors, parallel))
    assert [g for group in groups for g in group] == [f"D1:{k + 1}" for k in range(n)] and len(done) == n
    assert [len(g) for g in groups][:1] == ([1] if n else []), "the first batch goes alone"
